"""Exact loss-augmented inference for count-statistic losses on chains.

argmax_y H(θ_y, G(y)) for a task loss Δ = η(G) and any H non-decreasing in its first
argument, by constrained message passing: one dynamic program gives
μ(l) = max {θ_y : G(y) = l} for every statistic value l, then l* = argmax_l H(μ(l), l) and
a second pass recovers a labeling with G = l* and score μ(l*). Margin rescaling is
H = F + η(G); slack rescaling is H = (1 + F − θ_ȳ) η(G).

References
----------
Tarlow & Zemel (2012); Bauer, Nowozin & Lampert, "Efficient exact inference with loss
augmented objective in structured learning" (constrained message passing).
"""

import numpy as np

from ..utils._parallel import threads_for
from . import _constrained_kernels as kernels

__all__ = [
    "StatisticTable",
    "best_with_statistic",
    "loss_augmented_map_by_statistic",
    "statistic_table",
]


class StatisticTable:
    """μ(l) for every sequence and every value l of a count statistic.

    Attributes
    ----------
    best : ndarray of shape (n_rows,)
        μ(l); -inf for values no labeling reaches. Rows of sequence ``i`` are
        ``table_offsets[i]:table_offsets[i + 1]``.
    stats : ndarray of shape (n_rows, n_counters)
        The counter values l of each row.
    example : ndarray of shape (n_rows,)
        The sequence each row belongs to.
    table_offsets : ndarray of shape (n_sequences + 1,)
    """

    def __init__(self, best, stats, example, table_offsets):
        self.best = best
        self.stats = stats
        self.example = example
        self.table_offsets = table_offsets

    def argmax(self, values):
        """Row index, within its sequence, of the largest ``values`` of each sequence."""
        starts = self.table_offsets[:-1]
        top = np.maximum.reduceat(values, starts)
        is_top = values >= top[self.example]
        rows = np.arange(values.shape[0])
        first = np.minimum.reduceat(np.where(is_top, rows, values.shape[0]), starts)
        return first - starts


def _radix(caps):
    return np.ascontiguousarray(np.asarray(caps, dtype=np.int64) + 1)


def statistic_table(scores, increments, caps):
    """μ(l) = max {θ_y : G(y) = l} of every sequence, for capped count statistics.

    Parameters
    ----------
    scores : ChainScores
    increments : ndarray of shape (n_tokens, n_states, n_counters), int
        What each token adds to each counter when it takes each state.
    caps : ndarray of shape (n_sequences, n_counters), int
        Each counter stops at its cap; a cap at the sequence length never binds.

    Returns
    -------
    StatisticTable
    """
    radix = _radix(caps)
    sizes = np.prod(radix, axis=1)
    table_offsets = np.concatenate(([0], np.cumsum(sizes)))
    increments = np.ascontiguousarray(increments, dtype=np.int64)
    with threads_for(int(sizes.sum()) * scores.n_states**2):
        best = kernels.best_per_statistic(
            *scores._kernel_args(), increments, radix, table_offsets
        )
    example = np.repeat(np.arange(scores.n_sequences), sizes)
    local = np.arange(table_offsets[-1]) - table_offsets[:-1][example]
    strides = np.cumprod(radix[:, ::-1], axis=1)[:, ::-1] // radix
    stats = (local[:, None] // strides[example]) % radix[example]
    return StatisticTable(best, stats, example, table_offsets)


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
    """
    radix = _radix(caps)
    increments = np.ascontiguousarray(increments, dtype=np.int64)
    with threads_for(int(np.prod(radix, axis=1).sum()) * scores.n_states**2):
        return kernels.best_with_statistic(
            *scores._kernel_args(), increments, radix, np.asarray(targets, dtype=np.int64)
        )


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


def _check_monotone(objective, table, gold, n_gold):
    finite = np.isfinite(table.best)
    F = table.best[finite]
    rows = np.flatnonzero(finite)
    for step in (1e-3, 1.0, 10.0):
        low = objective(F, table.stats[rows], table.example[rows], gold, n_gold)
        high = objective(F + step, table.stats[rows], table.example[rows], gold, n_gold)
        if np.any(high < low - 1e-12 * (1 + np.abs(low))):
            raise ValueError(
                "The loss-augmented objective H(F, G) must be non-decreasing in the score F "
                "for exact inference; it decreased on a sample of values."
            )


def _margin(F, stats, example, gold, n_gold, eta):
    return F + eta(stats, n_gold[example])


def _slack(F, stats, example, gold, n_gold, eta):
    return (1.0 + F - gold[example]) * eta(stats, n_gold[example])


def loss_augmented_map_by_statistic(decoder, scores, y_true, task_loss, rescaling="margin"):
    """argmax_y H(θ_y, G(y)) on chains, exactly.

    Parameters
    ----------
    decoder : ChainDecoder
        Gives the gold scores θ_ȳ.
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
    """
    increments, caps = _loss_counters(task_loss, y_true, scores)
    table = statistic_table(scores, increments, caps)
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
    return best_with_statistic(scores, increments, caps, table.argmax(values))


def _solve_at(scores, increments, caps, targets):
    """Best labelings with statistic ``targets``; -1 rows and -inf where none exists."""
    table = statistic_table(scores, increments, caps)
    reachable = np.isfinite(table.best[table.table_offsets[:-1] + targets])
    labels = np.full(scores.unary.shape[0], -1, dtype=np.int64)
    values = np.full(scores.n_sequences, -np.inf)
    if reachable.any():
        found = best_with_statistic(scores, increments, caps, np.where(reachable, targets, 0))
        mask = np.repeat(reachable, scores.lengths)
        labels[mask] = found[mask]
        values[reachable] = table.best[table.table_offsets[:-1] + targets][reachable]
    return labels, values


def map_with_label_count(scores, count, positive_states):
    """Exactly ``count`` positive tokens; see ``ChainDecoder.map_with_label_count``."""
    count = np.broadcast_to(np.asarray(count, dtype=np.int64), (scores.n_sequences,))
    if np.any(count < 0):
        raise ValueError("count must be non-negative.")
    positive = np.asarray(positive_states, dtype=np.int64)
    increments = np.broadcast_to(positive[None, :, None], scores.unary.shape + (1,))
    caps = np.minimum(count, scores.lengths)[:, None] + 1
    feasible = count <= scores.lengths
    labels, best = _solve_at(scores, increments, caps, np.where(feasible, count, 0))
    infeasible = np.repeat(~feasible, scores.lengths)
    labels[infeasible] = -1
    best[~feasible] = -np.inf
    return labels, best


def _mismatch_counters(others, n_states):
    """increments[t, s, j] = 1 if state s differs from labeling j at token t."""
    return (np.arange(n_states)[None, :, None] != others[:, None, :]).astype(np.int64)


def map_with_min_distance(scores, others, min_distance):
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
    return _solve_at(scores, increments, caps, targets)


def diverse_top_k(scores, k, min_distance=1):
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
        labels, best = map_with_min_distance(scores, paths[:, :r], min_distance)
        paths[:, r], path_scores[:, r] = labels, best
    return paths, path_scores
