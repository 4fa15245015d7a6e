"""Bipartite matchings: score and part containers and the matching decoder."""

import itertools

import numpy as np
from scipy.optimize import linear_sum_assignment

from ...losses._base import check_task_loss_values
from ...utils._blocks import cumulative, gather_ranges, normalize_indices
from .._core.decoder import Decoder
from .._core.checks import (
    _trusted,
    check_encoded_outputs,
    check_feasible,
    check_part_scores,
    check_score_array,
)
from .._core.unary import BlockParts

__all__ = [
    "MatchingScores",
    "MatchingParts",
    "MatchingDecoder",
    "matching_parts",
    "enumerate_matchings",
]


def _check_shapes(shapes):
    """Validate the (n_examples, 2) array of (n_rows, n_cols); return it as int64."""
    shapes = np.asarray(shapes)
    if shapes.ndim != 2 or shapes.shape[1] != 2:
        raise ValueError(
            f"shapes has shape {shapes.shape}; expected (n_examples, 2), one "
            "(n_rows, n_cols) pair per example."
        )
    if shapes.size and not np.issubdtype(shapes.dtype, np.integer):
        raise ValueError(f"shapes must hold integers; got dtype {shapes.dtype}.")
    shapes = np.ascontiguousarray(shapes, dtype=np.int64)
    empty = np.flatnonzero((shapes < 1).any(axis=1))
    if empty.size:
        i = empty[0]
        raise ValueError(
            f"Every example needs at least one row and one column; example {i} has shape "
            f"({shapes[i, 0]}, {shapes[i, 1]}) (empty example)."
        )
    return shapes


def _row_offsets(shapes):
    return cumulative(shapes[:, 0])


def _unary_offsets(shapes):
    return cumulative(shapes[:, 0] * shapes[:, 1])


def _take(unary, shapes, indices):
    indices = normalize_indices(indices, shapes.shape[0])
    sizes = shapes[:, 0] * shapes[:, 1]
    positions = gather_ranges(_unary_offsets(shapes)[indices], sizes[indices])
    return unary[positions], shapes[indices]


class MatchingScores:
    """Pair scores η of a batch of bipartite matching problems.

    Example ``i`` is a complete bipartite graph with ``r_i`` rows and ``c_i`` columns
    (rectangular allowed) and a score matrix S_i of shape (r_i, c_i). Its outputs are the
    matchings of maximum cardinality: sets M of min(r_i, c_i) (row, column) pairs that use
    every row and every column at most once. The score of a matching is

    .. math:: θ_M = \\sum_{(j, k) \\in M} S_i[j, k].

    Parameters
    ----------
    unary : ndarray of shape (Σ_i r_i c_i,)
        The row-major ravel of every example's score matrix, stacked: example ``i``'s
        matrix is ``unary[unary_offsets[i]:unary_offsets[i + 1]].reshape(r_i, c_i)``.
        ``-inf`` forbids a pair; NaN and +inf are rejected.
    shapes : ndarray of shape (n_examples, 2), int
        (r_i, c_i) of every example; both at least 1.

    Attributes
    ----------
    unary : ndarray of shape (Σ_i r_i c_i,), float64
    shapes : ndarray of shape (n_examples, 2), int64

    Notes
    -----
    Encoded outputs hold one entry per row, stacked over the batch (``offsets``): the
    column matched to the row, or -1 for a row left unmatched (only when r_i > c_i).
    Task losses therefore see the rows of an example as its tokens.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders._matching.decoder import MatchingScores
    >>> scores = MatchingScores(np.arange(10.), shapes=[[2, 2], [3, 2]])
    >>> scores.n_examples, scores.offsets, scores.unary_offsets
    (2, array([0, 2, 5]), array([ 0,  4, 10]))
    >>> scores.block(1)
    array([[4., 5.],
           [6., 7.],
           [8., 9.]])
    """

    def __init__(self, unary, shapes):
        unary = check_score_array(
            unary, "unary", owner="MatchingScores", ndim=1,
            layout="(Σ_i r_i c_i,): the row-major ravel of every example's (n_rows, n_cols) "
                   "score matrix, stacked",
        )
        shapes = _check_shapes(shapes)
        unary_offsets = _unary_offsets(shapes)
        if unary.shape[0] != unary_offsets[-1]:
            raise ValueError(
                f"unary has {unary.shape[0]} entries; shapes needs Σ_i r_i c_i = "
                f"{unary_offsets[-1]}."
            )
        check_part_scores(unary, "pair", owner="MatchingScores", offsets=unary_offsets)
        self.unary = unary
        self.shapes = shapes
        self._unary_offsets = unary_offsets
        self._offsets = _row_offsets(shapes)

    @classmethod
    def from_blocks(cls, blocks):
        """Scores from a list of 2-D score matrices, one per example.

        Parameters
        ----------
        blocks : sequence of array-like of shape (r_i, c_i)

        Returns
        -------
        MatchingScores
        """
        blocks = [np.asarray(block, dtype=np.float64) for block in blocks]
        if not blocks:
            raise ValueError(
                "MatchingScores.from_blocks: no examples (an empty list of blocks); give "
                "one (n_rows, n_cols) score matrix per example."
            )
        for i, block in enumerate(blocks):
            if block.ndim != 2:
                raise ValueError(
                    f"Block {i} has shape {block.shape}; expected (n_rows, n_cols)."
                )
        shapes = np.array([block.shape for block in blocks], dtype=np.int64).reshape(-1, 2)
        unary = np.concatenate([block.ravel() for block in blocks])
        return cls(unary, shapes)

    @property
    def n_examples(self):
        """Number of examples in the batch."""
        return self.shapes.shape[0]

    @property
    def offsets(self):
        """Row offsets, shape (n_examples + 1,): example ``i`` owns output entries
        ``offsets[i]:offsets[i + 1]``, one per row (cumulative r_i from 0)."""
        return self._offsets

    @property
    def unary_offsets(self):
        """Score offsets, shape (n_examples + 1,): cumulative r_i c_i from 0."""
        return self._unary_offsets

    def block(self, i):
        """The (r_i, c_i) score matrix of example ``i``, as a view."""
        a, b = self._unary_offsets[i], self._unary_offsets[i + 1]
        return self.unary[a:b].reshape(self.shapes[i, 0], self.shapes[i, 1])

    def replace(self, *, unary=None):
        """A copy with the pair scores replaced (same shapes)."""
        return type(self)(self.unary if unary is None else unary, self.shapes)

    def take(self, indices):
        """The sub-batch of the examples ``indices``, in that order.

        Parameters
        ----------
        indices : array-like of shape (n_taken,), int, or a boolean mask

        Returns
        -------
        MatchingScores
        """
        unary, shapes = _take(self.unary, self.shapes, indices)
        return _trusted(type(self), unary=unary, shapes=shapes,
                        _unary_offsets=_unary_offsets(shapes), _offsets=_row_offsets(shapes))

    def _check_outputs(self, y, name="y"):
        """Encoded matchings ``y`` (Σ_i r_i,) checked against the batch, as int64."""
        return _check_matchings(y, self.shapes, name)[0]


class MatchingParts(BlockParts):
    """Part vectors of a batch of matchings: pair indicators, or any weights on pairs.

    Laid out like :class:`MatchingScores`: ``unary`` is the row-major ravel of one
    (r_i, c_i) matrix per example, stacked. Indicators of a matching M hold
    a[j, k] = 1[(j, k) ∈ M]. Arithmetic keeps the layout.

    Parameters
    ----------
    unary : ndarray of shape (Σ_i r_i c_i,)
    shapes : ndarray of shape (n_examples, 2), int64

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders._matching.decoder import MatchingScores, matching_parts
    >>> scores = MatchingScores(np.array([1., 2., 3., 4.]), shapes=[[2, 2]])
    >>> parts = matching_parts(np.array([1, 0]), scores.shapes)
    >>> parts.unary
    array([0., 1., 1., 0.])
    >>> parts.dot(scores)
    array([5.])
    """

    def __init__(self, unary, shapes):
        self.unary = unary
        self.shapes = shapes

    def _new(self, unary):
        return type(self)(unary, self.shapes)

    @property
    def unary_offsets(self):
        """Cumulative r_i c_i from 0, shape (n_examples + 1,)."""
        return _unary_offsets(self.shapes)

    def block(self, i):
        """The (r_i, c_i) part matrix of example ``i``, as a view."""
        offsets = self.unary_offsets
        r, c = self.shapes[i]
        return self.unary[offsets[i] : offsets[i + 1]].reshape(r, c)

    def example(self, i):
        """The parts of example ``i`` alone, as a view: writing to them writes here."""
        offsets = self.unary_offsets
        return type(self)(self.unary[offsets[i] : offsets[i + 1]], self.shapes[i : i + 1])

    def take(self, indices):
        """The parts of the examples ``indices``, in that order (a copy)."""
        return type(self)(*_take(self.unary, self.shapes, indices))


def _row_layout(shapes):
    """Per-row example index, index within the example, and the example's n_cols."""
    offsets = _row_offsets(shapes)
    example = np.repeat(np.arange(shapes.shape[0], dtype=np.int64), shapes[:, 0])
    local = np.arange(offsets[-1], dtype=np.int64) - offsets[example]
    return example, local, shapes[example, 1]


def _check_matchings(y, shapes, name="y"):
    """Validate stacked encoded matchings against ``shapes``; return y as int64 and the
    flat score positions of its matched pairs with their example indices."""
    example, local, n_cols = _row_layout(shapes)
    y = check_encoded_outputs(
        y, _row_offsets(shapes), n_cols - 1, low=-1, name=name, unit="row",
        expected="a column 0 .. {high}, or -1 for an unmatched row",
    )
    matched = y >= 0
    col_offsets = cumulative(shapes[:, 1])
    column_ids = col_offsets[example[matched]] + y[matched]
    uses = np.bincount(column_ids, minlength=int(col_offsets[-1]))
    if np.any(uses > 1):
        k = int(np.flatnonzero(uses > 1)[0])
        i = int(np.searchsorted(col_offsets, k, side="right") - 1)
        raise ValueError(
            f"{name} matches column {k - col_offsets[i]} of example {i} to {uses[k]} rows; "
            "a matching uses every column at most once."
        )
    n_matched = np.bincount(example[matched], minlength=shapes.shape[0])
    expected = shapes.min(axis=1)
    wrong = np.flatnonzero(n_matched != expected)
    if wrong.size:
        i = wrong[0]
        raise ValueError(
            f"{name} matches {n_matched[i]} rows of example {i} (shape "
            f"({shapes[i, 0]}, {shapes[i, 1]})); a matching has exactly min(r, c) = "
            f"{expected[i]} pairs."
        )
    positions = (
        _unary_offsets(shapes)[example[matched]] + local[matched] * n_cols[matched] + y[matched]
    )
    return y, positions, example[matched]


def matching_parts(y, shapes):
    """Pair indicators of encoded matchings.

    Parameters
    ----------
    y : ndarray of shape (Σ_i r_i,), int
        The matched column of every row (-1 for an unmatched row), stacked.
    shapes : ndarray of shape (n_examples, 2), int
        (r_i, c_i) of every example.

    Returns
    -------
    MatchingParts
        a[j, k] = 1 when row ``j`` is matched to column ``k``, else 0.
    """
    shapes = _check_shapes(shapes)
    _, positions, _ = _check_matchings(y, shapes)
    unary = np.zeros(int(_unary_offsets(shapes)[-1]))
    unary[positions] = 1.0
    return MatchingParts(unary, shapes)


def enumerate_matchings(r, c):
    """Every maximum-cardinality matching of an (r, c) bipartite graph, encoded.

    Parameters
    ----------
    r, c : int >= 1
        Numbers of rows and columns.

    Returns
    -------
    ndarray of shape (n_matchings, r), int64
        Row ``m`` is the ``m``-th matching: the column of every row, -1 for an unmatched
        row. There are max(r, c)! / |r − c|! matchings of min(r, c) pairs each.

    Examples
    --------
    >>> from skstruct.decoders._matching.decoder import enumerate_matchings
    >>> enumerate_matchings(2, 2)
    array([[0, 1],
           [1, 0]])
    >>> enumerate_matchings(3, 1)
    array([[ 0, -1, -1],
           [-1,  0, -1],
           [-1, -1,  0]])
    """
    r, c = int(r), int(c)
    if r < 1 or c < 1:
        raise ValueError(f"A matching needs r, c >= 1; got r={r}, c={c}.")
    if r <= c:
        return np.array(list(itertools.permutations(range(c), r)), dtype=np.int64).reshape(-1, r)
    # r > c: choose the row of every column.
    rows_of_columns = np.array(list(itertools.permutations(range(r), c)), dtype=np.int64)
    out = np.full((rows_of_columns.shape[0], r), -1, dtype=np.int64)
    np.put_along_axis(out, rows_of_columns, np.arange(c, dtype=np.int64)[None, :], axis=1)
    return out


class MatchingDecoder(Decoder):
    """Exact MAP over maximum-cardinality bipartite matchings (linear assignment).

    Each example is an (r, c) score matrix S; its outputs are the matchings of min(r, c)
    pairs, scored θ_M = Σ_{(j, k) ∈ M} S[j, k]. MAP solves the linear assignment problem
    with :func:`scipy.optimize.linear_sum_assignment`; loss-augmented MAP under the
    Hamming loss is MAP on cost-augmented scores (:meth:`cost_augmented`). Since SparseMAP
    needs only a MAP oracle, it applies too.

    There is no log-partition or marginals: Σ_M exp θ_M is the permanent of exp(S), which
    is #P-hard to compute, so there is no CRF over matchings.

    Notes
    -----
    Encoded outputs hold the matched column of every row, stacked over the batch
    (``scores.offsets``), -1 for an unmatched row (only when r > c). Time
    O(min(r, c)² max(r, c)) per example for MAP.

    References
    ----------
    Valiant (1979). The complexity of computing the permanent. Theoretical Computer
    Science 8(2).
    Crouse (2016). On implementing 2D rectangular assignment algorithms. IEEE Transactions
    on Aerospace and Electronic Systems 52(4).

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders._matching.decoder import MatchingDecoder, MatchingScores
    >>> scores = MatchingScores.from_blocks([[[1., 3.], [2., 5.]],
    ...                                      [[0., 4.], [1., 0.], [3., 0.]]])
    >>> MatchingDecoder().map(scores, return_score=True)
    (array([ 0,  1,  1, -1,  0]), array([6., 7.]))
    """

    output_kind = "matching"
    capabilities = frozenset({"map", "loss_augmented_map", "parts"})
    score_types = MatchingScores
    _parameter_constraints: dict = {}

    def map(self, scores, *, return_score=False):
        """The highest-scoring matching of every example.

        Parameters
        ----------
        scores : MatchingScores
        return_score : bool, default=False

        Returns
        -------
        y : ndarray of shape (Σ_i r_i,), int64
            The matched column of every row, -1 for unmatched rows, stacked.
        best : ndarray of shape (n_examples,)
            Their scores, when ``return_score`` is True.

        Raises
        ------
        InfeasibleOutputError
            When every matching of an example uses a pair scored -inf.
        """
        self._check_scores(scores)
        unary, shapes = scores.unary, scores.shapes
        unary_offsets, offsets = scores.unary_offsets, scores.offsets
        rows, cols = [], []
        feasible = np.zeros(shapes.shape[0])
        for i in range(shapes.shape[0]):
            r, c = shapes[i]
            block = unary[unary_offsets[i] : unary_offsets[i + 1]].reshape(r, c)
            try:
                row_ind, col_ind = linear_sum_assignment(block, maximize=True)
            except ValueError:  # scores are NaN- and +inf-free: every matching is forbidden
                feasible[i] = -np.inf
                continue
            rows.append(row_ind + offsets[i])
            cols.append(col_ind)
        check_feasible(feasible)
        y = np.full(int(offsets[-1]), -1, dtype=np.int64)
        if rows:
            y[np.concatenate(rows)] = np.concatenate(cols)
        if return_score:
            return y, self.score_outputs(scores, y)
        return y

    def _no_partition_function(self):
        raise NotImplementedError(
            f"{type(self).__name__} does not implement 'marginals': the partition function "
            "of bipartite matchings, Σ_M exp θ_M, is the permanent of exp(scores), which "
            "is #P-hard to compute, so there is no CRF over matchings. Its capabilities are "
            f"{sorted(self.capabilities)}: MAP, loss-augmented MAP and SparseMAP (which "
            "needs only MAP) are available."
        )

    def log_partition(self, scores):
        """Not available: the partition function of matchings is #P-hard (the permanent).

        Raises
        ------
        NotImplementedError
        """
        self._no_partition_function()

    def marginals(self, scores):
        """Not available: the partition function of matchings is #P-hard (the permanent).

        Raises
        ------
        NotImplementedError
        """
        self._no_partition_function()

    def parts(self, scores, y):
        """Pair indicators of the encoded matchings ``y``.

        Parameters
        ----------
        scores : MatchingScores
        y : ndarray of shape (Σ_i r_i,), int
            Every row's column (-1 unmatched), stacked; each column used at most once and
            exactly min(r_i, c_i) rows matched per example.

        Returns
        -------
        MatchingParts
        """
        self._check_scores(scores)
        return matching_parts(y, scores.shapes)

    def score_outputs(self, scores, y):
        """θ_y = Σ of the scores of the matched pairs, shape (n_examples,)."""
        self._check_scores(scores)
        _, positions, example = _check_matchings(y, scores.shapes)
        return np.bincount(example, weights=scores.unary[positions], minlength=scores.n_examples)

    def cost_augmented(self, scores, y_true, task_loss):
        """Scores η + c whose matching scores are θ_y + Δ(y_true, y), exactly.

        For the Hamming loss Δ(y_true, y) = Σ_j 1[y_j ≠ y_true_j] over the rows (matched
        versus unmatched counts as a difference), the cost of pair (j, k) is

        .. math:: c_{jk} = 1[k ≠ g_j] + 1[g_j = -1],

        with g_j the gold column of row j (-1 when unmatched), divided by r with
        ``normalize=True``; in general, for a loss that counts the mismatched rows with
        one weight w per example (:meth:`~skstruct.losses.TaskLoss.mismatch_weights`),
        multiplied by w. Then ⟨c, a_y⟩ = Δ(y_true, y) for every matching y, with no
        per-example constant. A row matched by both y and y_true costs
        1[y_j ≠ g_j] = Δ_j. The other rows differ in y and y_true (Δ_j = 1 each); since
        y and y_true both match min(r, c) rows, those that y matches but y_true does not
        (cost 2 each) are exactly as many as those y_true matches but y does not (cost
        0 each), so together they cost their number.

        Parameters
        ----------
        scores : MatchingScores
        y_true : ndarray of shape (Σ_i r_i,), int
            Encoded gold matchings, stacked.
        task_loss : HammingLoss
            Without ``class_costs``.

        Returns
        -------
        MatchingScores
        """
        return super().cost_augmented(scores, y_true, task_loss)

    def _cost_augmented(self, scores, y_true, task_loss):
        weights = task_loss.mismatch_weights(scores.offsets)
        if weights is not None:
            weights = np.asarray(weights, dtype=np.float64)
            check_task_loss_values(weights, task_loss, "mismatch_weights")
            lengths = np.diff(scores.offsets)
            if not np.array_equal(weights, np.repeat(weights[scores.offsets[:-1]], lengths)):
                weights = None  # the pairing of unmatched rows needs one weight per example
        if weights is None:
            raise self._unsupported_loss(task_loss, "margin")
        shapes = scores.shapes
        _, positions, _ = _check_matchings(y_true, shapes, name="y_true")
        _, _, n_cols = _row_layout(shapes)
        per_row = np.where(y_true < 0, 2.0, 1.0) * weights
        costs = np.repeat(per_row, n_cols)
        costs[positions] = 0.0
        return scores.replace(unary=scores.unary + costs)

    def _unsupported_loss(self, task_loss, rescaling):
        if not (rescaling in ("margin", "slack") or callable(rescaling)):
            return ValueError(f"rescaling must be 'margin' or 'slack'; got {rescaling!r}.")
        if rescaling != "margin":
            return ValueError(
                "MatchingDecoder has no exact loss-augmented MAP with rescaling="
                f"{rescaling!r}; use rescaling='margin' with HammingLoss."
            )
        if task_loss.n_classes is not None:
            return ValueError(
                f"{task_loss!r} is defined on {task_loss.n_classes} classes (class costs "
                "or positive classes), which matchings do not have: columns are not "
                "classes shared across examples. Use a loss without classes "
                "(HammingLoss(class_costs=None))."
            )
        return ValueError(
            f"MatchingDecoder has cost-augmented scores (and exact loss-augmented MAP) "
            f"for the Hamming loss only; got {type(task_loss).__name__}. It needs a loss "
            "that counts the mismatched rows with one weight per example "
            "(TaskLoss.mismatch_weights). Use HammingLoss, or BruteForceDecoder, which "
            "enumerates every output, on tiny problems."
        )

    def loss_augmented_map(self, scores, y_true, task_loss, rescaling="margin"):
        """argmax_y θ_y + Δ(y_true, y) for every example, exactly (Hamming loss).

        MAP on :meth:`cost_augmented` scores.

        Parameters
        ----------
        scores : MatchingScores
        y_true : ndarray of shape (Σ_i r_i,), int
            Encoded gold matchings, stacked.
        task_loss : HammingLoss
            Without ``class_costs``; ``normalize`` allowed.
        rescaling : {"margin"}, default="margin"
            Slack rescaling has no exact solver here.

        Returns
        -------
        ndarray of shape (Σ_i r_i,), int64
        """
        return super().loss_augmented_map(scores, y_true, task_loss, rescaling)
