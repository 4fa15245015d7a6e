"""Exact loss-augmented inference for count-statistic losses on chains.

argmax_y H(θ_y, G(y)) for a task loss Δ = η(G) and any H non-decreasing in its first
argument, by constrained message passing: one dynamic program gives
μ(l) = max {θ_y : G(y) = l} for every statistic value l, then l* = argmax_l H(μ(l), l) and
a second pass recovers a labeling with G = l* and score μ(l*). Margin rescaling is
H = F + η(G); slack rescaling is H = (1 + F − θ_ȳ) η(G).

Memory. The first pass keeps two score rows (S, R) per sequence (R statistic values). The
second pass keeps back-pointers, only the previous state in the smallest integer type
(the previous counter values follow from the increments unless a cap binds), and only for
the values that are reachable from the first token and can still reach l*. Before
anything is allocated, a bound over all l* (:meth:`_Counters.memory`, which depends on
the lengths and gold labels, not the scores) is compared with the decoder's
``max_table_memory``: a sequence above it raises :class:`TableMemoryError`, and the
number of threads is lowered so that sequences processed together fit in it.

References
----------
Tarlow & Zemel (2012); Bauer, Nowozin & Lampert, "Efficient exact inference with loss
augmented objective in structured learning" (constrained message passing).
"""

from contextlib import contextmanager

import numba
import numpy as np

from ...utils._chunks import weighted_chunks
from ...utils._parallel import dynamic_schedule, threads_for
from . import counting_kernels as kernels
from .._core.statistic_table import (
    _TABLE_BYTES_PER_VALUE,
    DEFAULT_MAX_TABLE_MEMORY,
    StatisticTable,
    TableMemoryError,
    _check_monotone,
    _format_bytes,
)

__all__ = [
    "DEFAULT_MAX_TABLE_MEMORY",
    "StatisticTable",
    "TableMemoryError",
    "best_with_statistic",
    "loss_augmented_map_by_statistic",
    "loss_table_memory",
    "statistic_table",
]


def _segment_cumsum(values, offsets):
    """Cumulative sums along axis 0, restarting at every sequence."""
    total = np.cumsum(values, axis=0)
    before = total[offsets[:-1]] - values[offsets[:-1]]
    return total - np.repeat(before, np.diff(offsets), axis=0)


def _smallest_int(largest):
    """An empty array of the smallest signed integer type that holds ``largest``."""
    for dtype in (np.int8, np.int16, np.int32):
        if largest <= np.iinfo(dtype).max:
            return np.empty(0, dtype=dtype)
    return np.empty(0, dtype=np.int64)


class _Counters:
    """The counters of a batch: increments, caps and the values reachable after each token.

    Parameters
    ----------
    scores : ChainScores
    increments : ndarray of shape (n_tokens, n_states, K), int, non-negative
    caps : ndarray of shape (n_sequences, K), int

    Attributes
    ----------
    radix : ndarray of shape (n_sequences, K)
        cap + 1.
    low, high : ndarray of shape (n_tokens, K)
        Smallest and largest (capped) value of every counter after each token.
    saturates : ndarray of shape (n_sequences,), bool
        Whether a counter of the sequence can reach its cap.
    sizes : ndarray of shape (n_sequences,)
        Number of statistic values R of each sequence.
    """

    def __init__(self, scores, increments, caps):
        increments = np.asarray(increments, dtype=np.int64)
        caps = np.asarray(caps, dtype=np.int64).reshape(scores.n_sequences, -1)
        if increments.shape[-1] == 0:  # no counter: one value, plain Viterbi
            increments = np.zeros(scores.unary.shape + (1,), dtype=np.int64)
            caps = np.zeros((scores.n_sequences, 1), dtype=np.int64)
        if np.any(increments < 0) or np.any(caps < 0):
            raise ValueError("Counter increments and caps must be non-negative.")
        self.scores = scores
        self.increments = np.ascontiguousarray(increments)
        self.radix = np.ascontiguousarray(caps + 1)
        offsets, lengths = scores.offsets, scores.lengths
        self._sum_low = _segment_cumsum(self.increments.min(axis=1), offsets)
        self._sum_high = _segment_cumsum(self.increments.max(axis=1), offsets)
        token_caps = np.repeat(caps, lengths, axis=0)
        self.low = np.ascontiguousarray(np.minimum(self._sum_low, token_caps))
        self.high = np.ascontiguousarray(np.minimum(self._sum_high, token_caps))
        self._capped = self._sum_high[offsets[1:] - 1] > caps  # (n_sequences, K)
        self.saturates = np.any(self._capped, axis=1)
        self.sizes = np.prod(self.radix, axis=1)
        self._memory = None

    def bounds_to(self, targets):
        """The (low, high) boxes narrowed to the values that can still reach ``targets``.

        ``targets`` are flat indices, one per sequence.
        """
        lengths = self.scores.lengths
        strides = np.cumprod(self.radix[:, ::-1], axis=1)[:, ::-1] // self.radix
        digits = np.asarray(targets, dtype=np.int64)[:, None] // strides % self.radix
        rest_low, rest_high = self._rest()
        target = np.repeat(digits, lengths, axis=0)
        # a counter that ends at its cap may have gone past it: any prefix value will do
        capped = (target == np.repeat(self.radix - 1, lengths, axis=0)) & np.repeat(
            self._capped, lengths, axis=0)
        low = np.maximum(self.low, target - rest_high)
        high = np.where(capped, self.high, np.minimum(self.high, target - rest_low))
        return np.ascontiguousarray(low), np.ascontiguousarray(high)

    def _back_types(self):
        """Empty arrays of the dtypes of the stored previous states and counter values.

        Values are int32 unless a table is larger, so that the kernel is compiled for one
        or two combinations only.
        """
        values = np.int32 if self.sizes.max() <= np.iinfo(np.int32).max else np.int64
        return _smallest_int(self.scores.n_states - 1), np.empty(0, dtype=values)

    def _rest(self):
        """Smallest and largest sums of the increments of the tokens after each token."""
        offsets, lengths = self.scores.offsets, self.scores.lengths
        last = offsets[1:] - 1
        return (np.repeat(self._sum_low[last], lengths, axis=0) - self._sum_low,
                np.repeat(self._sum_high[last], lengths, axis=0) - self._sum_high)

    def back_pointers(self, spans):
        """Number of back-pointers of each sequence when token t spans ``spans[t]`` values
        of each counter (the first token of a sequence has none)."""
        boxes = np.prod(np.maximum(spans, 0).astype(np.float64), axis=1)
        boxes[self.scores.offsets[:-1]] = 0.0
        return np.add.reduceat(boxes, self.scores.offsets[:-1]) * self.scores.n_states

    def back_pointer_bound(self):
        """Largest number of back-pointers of each sequence, whatever the target.

        The backtracking pass keeps, at each token, the values reachable from the first
        token and from which the target is reachable, so each counter spans at most the
        smaller of the ranges of the sums of the increments before and after the token
        (before only for a counter that can reach its cap).
        """
        rest_low, rest_high = self._rest()
        capped = np.repeat(self._capped, self.scores.lengths, axis=0)
        spans = np.where(capped, self.high - self.low,
                         np.minimum(self.high - self.low, rest_high - rest_low)) + 1
        return self.back_pointers(spans)

    def memory(self):
        """Upper bound of the bytes the two passes allocate for each sequence.

        :meth:`back_pointer_bound` back-pointers, two score rows ``(n_states, R)`` and
        the table's arrays. It depends on the lengths, the increments and the caps only,
        not on the scores: a sequence accepted once is accepted at every call.

        Returns
        -------
        ndarray of shape (n_sequences,), float
        """
        if self._memory is None:
            state_type, value_type = self._back_types()
            per_entry = state_type.itemsize + np.where(self.saturates, value_type.itemsize, 0)
            n_counters = self.radix.shape[1]
            sizes = self.sizes.astype(np.float64)
            self._memory = (self.back_pointer_bound() * per_entry
                            + 2 * self.scores.n_states * sizes * 8
                            + sizes * (_TABLE_BYTES_PER_VALUE + 16 * n_counters))
        return self._memory

    def check_memory(self, limit, what, batch_name="the batch"):
        """Raise :class:`TableMemoryError` if a sequence needs more than ``limit`` bytes."""
        estimates = self.memory()
        if limit is None:
            return estimates
        over = np.flatnonzero(estimates > limit)
        if over.size:
            raise TableMemoryError(
                _memory_message(self, estimates, over, limit, what, batch_name))
        return estimates


def _memory_message(counters, estimates, over, limit, what, batch_name="the batch"):
    i = over[np.argmax(estimates[over])]
    others = (f" ({over.size - 1} other sequences of {batch_name} too)"
              if over.size > 1 else "")
    return (
        f"Exact inference for {what} needs about {_format_bytes(estimates[i])} for sequence "
        f"{i} of {batch_name} ({counters.scores.lengths[i]} tokens, "
        f"{counters.scores.n_states} states, {counters.sizes[i]} statistic values), more "
        f"than max_table_memory={limit:.4g} bytes ({_format_bytes(limit)}){others}. The "
        "memory of count-statistic losses grows with the cube of the sequence length for "
        "two counters (F-beta, precision, IoU) and its square for one (recall, label count, "
        "Hamming or 0/1 with slack rescaling). Raise the limit (ChainDecoder("
        "max_table_memory=...), decoder__max_table_memory in a grid search, None for no "
        "limit) if the machine has the memory, split long sequences (for instance at "
        "sentence boundaries), or use a loss that decomposes over tokens (Hamming with "
        "margin rescaling)."
    )


def _check_limit(limit):
    number = isinstance(limit, (int, float, np.number)) and not isinstance(limit, bool)
    if limit is not None and not (number and limit > 0):
        raise ValueError(f"max_table_memory must be a positive number of bytes or None; got "
                         f"{limit!r}.")
    return limit


@contextmanager
def _threads(counters, work, limit):
    """:func:`threads_for`, with at most as many threads as sequences that fit together in
    ``limit`` bytes (each thread holds one sequence's tables at a time)."""
    with threads_for(work):
        if limit is not None:
            n_threads = numba.get_num_threads()
            largest = np.sort(counters.memory())[::-1][:n_threads]
            fit = int(np.count_nonzero(np.cumsum(largest) <= limit))
            numba.set_num_threads(max(1, min(n_threads, fit)))
        yield


def _allocation_message(counters, i, limit):
    return (
        f"Constrained message passing could not allocate its tables for sequence {i} of "
        f"the batch ({counters.scores.lengths[i]} tokens, estimated "
        f"{_format_bytes(counters.memory()[i])}): the process has less memory available "
        f"than max_table_memory={limit!r} bytes allows. Lower max_table_memory, free "
        "memory, or split long sequences."
    )


def _check_done(counters, done, limit):
    """Raise :class:`TableMemoryError` for a sequence whose kernel loop did not finish.

    Inside a parallel loop numba may lose the exceptions of the loop body; the only one
    these kernels can raise is a failed allocation.
    """
    if not done.all():
        i = int(np.flatnonzero(~done)[0])
        raise TableMemoryError(_allocation_message(counters, i, limit))


@contextmanager
def _allocation_failures(counters, limit):
    """Turn a failed allocation in a kernel into :class:`TableMemoryError`.

    numba reports a ``MemoryError`` raised in a parallel loop as a chain of
    ``SystemError``; the sequence is then unknown, the largest one is named.
    """
    try:
        yield
    except (MemoryError, SystemError) as error:
        cause = error
        while cause is not None and not isinstance(cause, MemoryError):
            cause = cause.__cause__ or cause.__context__
        if cause is None:
            raise
        i = int(np.argmax(counters.memory()))
        raise TableMemoryError(_allocation_message(counters, i, limit)) from error


def _table(counters, limit=None):
    """:func:`statistic_table` on prepared counters."""
    scores, sizes = counters.scores, counters.sizes
    table_offsets = np.concatenate(([0], np.cumsum(sizes)))
    work = kernels.box_work(scores.offsets, counters.low, counters.high, scores.n_states)
    with _threads(counters, work[-1], limit), dynamic_schedule(), \
            _allocation_failures(counters, limit):
        best, done = kernels.best_per_statistic(
            *scores._kernel_args(), counters.increments, counters.radix, counters.low,
            counters.high, table_offsets, weighted_chunks(work)
        )
    _check_done(counters, done, limit)
    radix = counters.radix
    example = np.repeat(np.arange(scores.n_sequences), sizes)
    local = np.arange(table_offsets[-1]) - table_offsets[:-1][example]
    strides = np.cumprod(radix[:, ::-1], axis=1)[:, ::-1] // radix
    stats = (local[:, None] // strides[example]) % radix[example]
    return StatisticTable(best, stats, example, table_offsets)


def _backtrack(counters, targets, limit=None):
    """:func:`best_with_statistic` on prepared counters; -1 over unreachable targets."""
    scores = counters.scores
    targets = np.asarray(targets, dtype=np.int64)
    low, high = counters.bounds_to(targets)
    state_type, value_type = counters._back_types()
    work = kernels.box_work(scores.offsets, low, high, scores.n_states)
    with _threads(counters, work[-1], limit), dynamic_schedule(), \
            _allocation_failures(counters, limit):
        labels, done = kernels.best_with_statistic(
            *scores._kernel_args(), counters.increments, counters.radix, low, high, targets,
            counters.saturates, state_type, value_type, weighted_chunks(work)
        )
    _check_done(counters, done, limit)
    return labels


def statistic_table(scores, increments, caps):
    """μ(l) = max {θ_y : G(y) = l} of every sequence, for capped count statistics.

    Parameters
    ----------
    scores : ChainScores
    increments : ndarray of shape (n_tokens, n_states, n_counters), int, non-negative
        What each token adds to each counter when it takes each state.
    caps : ndarray of shape (n_sequences, n_counters), int
        Each counter stops at its cap; a cap at the sequence length never binds.

    Returns
    -------
    StatisticTable
    """
    return _table(_Counters(scores, increments, caps))


def best_with_statistic(scores, increments, caps, targets):
    """The best labeling of every sequence whose capped statistic equals ``targets``.

    Parameters
    ----------
    scores, increments, caps
        As for :func:`statistic_table`.
    targets : ndarray of shape (n_sequences,), int
        Flattened statistic value (row within the sequence's table) to reach.

    Returns
    -------
    ndarray of shape (n_tokens,), int64
        -1 over the sequences where no labeling reaches its target.
    """
    return _backtrack(_Counters(scores, increments, caps), targets)


def _loss_counters(task_loss, y_true, scores):
    """Increments and caps of the loss's counters; caps are the largest reachable values.

    True positives cannot exceed the gold positives N*, so their counter stops there
    (R shrinks from (M + 1)² to (N* + 1)(M + 1) for F1); the others can reach M.
    """
    increments = task_loss.increments(y_true, scores.n_states)
    caps = np.repeat(scores.lengths[:, None], increments.shape[-1], axis=1)
    if "tp" in task_loss.statistic_names:
        n_gold = task_loss.gold_positives(y_true, scores.offsets, scores.n_states)
        caps[:, task_loss.statistic_names.index("tp")] = n_gold
    return increments, caps


def _margin(F, stats, example, gold, n_gold, eta):
    return F + eta(stats, n_gold[example])


def _slack(F, stats, example, gold, n_gold, eta):
    return (1.0 + F - gold[example]) * eta(stats, n_gold[example])


def _describe_loss(task_loss):
    names = ", ".join(task_loss.statistic_names)
    return f"{type(task_loss).__name__} (counters: {names})"


def loss_table_memory(scores, y_true, task_loss):
    """Bytes that exact loss-augmented inference for ``task_loss`` needs per sequence.

    The upper bound that ``max_table_memory`` is compared with: it does not depend on the
    scores, so a sequence accepted once is accepted at every call.

    Parameters
    ----------
    scores : ChainScores
    y_true : ndarray of shape (n_tokens,), int
    task_loss : CountingLoss
        Bound to its positive states.

    Returns
    -------
    ndarray of shape (n_sequences,), float
    """
    return _Counters(scores, *_loss_counters(task_loss, y_true, scores)).memory()


def loss_augmented_map_by_statistic(decoder, scores, y_true, task_loss, rescaling="margin"):
    """argmax_y H(θ_y, G(y)) on chains, exactly.

    Parameters
    ----------
    decoder : ChainDecoder
        Gives the gold scores θ_ȳ and the memory limit ``max_table_memory`` (bytes per
        call; default :data:`DEFAULT_MAX_TABLE_MEMORY` for decoders without it).
    scores : ChainScores
    y_true : ndarray of shape (n_tokens,), int
    task_loss : CountingLoss
        Bound to its positive states.
    rescaling : {"margin", "slack"} or callable, default="margin"
        A callable is ``H(F, stats, example, gold_scores, n_gold) -> values``, vectorized
        over rows; it must be non-decreasing in F (checked on the rows of the table).

    Returns
    -------
    ndarray of shape (n_tokens,), int64

    Raises
    ------
    TableMemoryError
        Before any table is allocated, when a sequence would need more memory than the
        limit (see :func:`loss_table_memory`).
    """
    limit = _check_limit(getattr(decoder, "max_table_memory", DEFAULT_MAX_TABLE_MEMORY))
    counters = _Counters(scores, *_loss_counters(task_loss, y_true, scores))
    counters.check_memory(limit, _describe_loss(task_loss))
    table = _table(counters, limit)
    gold = decoder.score_outputs(scores, y_true)
    n_gold = task_loss.gold_positives(y_true, scores.offsets, scores.n_states)
    finite = np.isfinite(table.best)
    best = np.where(finite, table.best, 0.0)
    if rescaling == "margin":
        values = _margin(best, table.stats, table.example, gold, n_gold, task_loss.eta)
    elif rescaling == "slack":
        values = _slack(best, table.stats, table.example, gold, n_gold, task_loss.eta)
    elif callable(rescaling):
        _check_monotone(rescaling, table, gold, n_gold)
        values = rescaling(best, table.stats, table.example, gold, n_gold)
    else:
        raise ValueError(f"rescaling must be 'margin', 'slack' or a callable; got {rescaling!r}.")
    values = np.where(finite, values, -np.inf)
    labels = _backtrack(counters, table.argmax(values), limit)
    # a sequence without any finite labeling gets state 0 (its score tells it is infeasible)
    return np.maximum(labels, 0)


def _solve_at(scores, increments, caps, targets, limit, what):
    """Best labelings with statistic ``targets``; -1 rows and -inf where none exists."""
    counters = _Counters(scores, increments, caps)
    counters.check_memory(_check_limit(limit), what)
    table = _table(counters, limit)
    values = table.best[table.table_offsets[:-1] + targets]
    labels = _backtrack(counters, targets, limit)
    return labels, values


def map_with_label_count(scores, count, positive_states,
                         max_table_memory=DEFAULT_MAX_TABLE_MEMORY):
    """Exactly ``count`` positive tokens; see ``ChainDecoder.map_with_label_count``."""
    count = np.broadcast_to(np.asarray(count, dtype=np.int64), (scores.n_sequences,))
    if np.any(count < 0):
        raise ValueError("count must be non-negative.")
    positive = np.asarray(positive_states, dtype=np.int64)
    increments = np.broadcast_to(positive[None, :, None], scores.unary.shape + (1,))
    caps = np.minimum(count, scores.lengths)[:, None] + 1
    feasible = count <= scores.lengths
    labels, best = _solve_at(scores, increments, caps, np.where(feasible, count, 0),
                             max_table_memory, "a label count")
    infeasible = np.repeat(~feasible, scores.lengths)
    labels[infeasible] = -1
    best[~feasible] = -np.inf
    return labels, best


def _mismatch_counters(others, n_states):
    """increments[t, s, j] = 1 if state s differs from labeling j at token t."""
    return (np.arange(n_states)[None, :, None] != others[:, None, :]).astype(np.int64)


def map_with_min_distance(scores, others, min_distance,
                          max_table_memory=DEFAULT_MAX_TABLE_MEMORY):
    """Best labeling far from ``others``; see ``ChainDecoder.map_with_min_distance``."""
    others = np.asarray(others, dtype=np.int64).reshape(scores.unary.shape[0], -1)
    min_distance = int(min_distance)
    if min_distance < 1:
        raise ValueError(f"min_distance must be >= 1; got {min_distance}.")
    caps = np.full((scores.n_sequences, others.shape[1]), min_distance, dtype=np.int64)
    increments = np.where(
        (others == -1)[:, None, :], min_distance, _mismatch_counters(others, scores.n_states)
    )
    targets = np.prod(caps + 1, axis=1) - 1
    return _solve_at(scores, increments, caps, targets, max_table_memory,
                     f"a minimum distance from {others.shape[1]} labelings")


def diverse_top_k(scores, k, min_distance=1, max_table_memory=DEFAULT_MAX_TABLE_MEMORY):
    """``k`` labelings chosen greedily, each the best at distance >= ``min_distance`` from
    the ones before it. With ``min_distance=1`` these are the exact ``k`` best.

    Returns
    -------
    paths : ndarray of shape (n_tokens, k), int64
        -1 where fewer exist.
    path_scores : ndarray of shape (n_sequences, k)
    """
    paths = np.full((scores.unary.shape[0], k), -1, dtype=np.int64)
    path_scores = np.full((scores.n_sequences, k), -np.inf)
    for r in range(k):
        labels, best = map_with_min_distance(scores, paths[:, :r], min_distance,
                                             max_table_memory)
        paths[:, r], path_scores[:, r] = labels, best
    return paths, path_scores


def check_training_table_memory(decoder, scores, y_true, task_loss, batch_name):
    """Before training: every sequence fits the decoder's ``max_table_memory``.

    Solvers that visit one example at a time would otherwise report "sequence 0 of the
    batch"; checked on the whole training set, the error names the training sequence.
    """
    limit = _check_limit(getattr(decoder, "max_table_memory", DEFAULT_MAX_TABLE_MEMORY))
    counters = _Counters(scores, *_loss_counters(task_loss, y_true, scores))
    counters.check_memory(limit, _describe_loss(task_loss), batch_name)
