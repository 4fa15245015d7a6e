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

__all__ = ["StatisticTable", "statistic_table", "loss_augmented_map_by_statistic"]


class StatisticTable:
    """μ(l) for every sequence and every value l of a count statistic.

    Attributes
    ----------
    best : ndarray of shape (n_rows,)
        μ(l); -inf for values no labeling reaches. Rows of sequence ``i`` are
        ``table_offsets[i]:table_offsets[i + 1]``.
    stats : ndarray of shape (n_rows, n_statistics)
        The statistic value l of each row.
    example : ndarray of shape (n_rows,)
        The sequence each row belongs to.
    table_offsets : ndarray of shape (n_sequences + 1,)
    """

    def __init__(self, best, stats, example, table_offsets, layout):
        self.best = best
        self.stats = stats
        self.example = example
        self.table_offsets = table_offsets
        self._layout = layout

    def argmax(self, values):
        """Row index, within its sequence, of the largest ``values`` of each sequence."""
        starts = self.table_offsets[:-1]
        top = np.maximum.reduceat(values, starts)
        is_top = values >= top[self.example]
        rows = np.arange(values.shape[0])
        first = np.minimum.reduceat(np.where(is_top, rows, values.shape[0]), starts)
        return first - starts


def _layout(task_loss, y_true, offsets, n_states):
    """Flattened statistic increments (n_tokens, n_states) and table sizes per sequence."""
    incr = task_loss.increments(y_true, n_states)
    n_stats = incr.shape[-1]
    lengths = np.diff(offsets)
    radix = lengths + 1
    strides = radix[:, None] ** np.arange(n_stats - 1, -1, -1)[None, :]
    token_strides = np.repeat(strides, lengths, axis=0)
    flat = np.einsum("tsk,tk->ts", incr, token_strides)
    sizes = radix**n_stats
    table_offsets = np.concatenate(([0], np.cumsum(sizes)))
    return np.ascontiguousarray(flat), sizes, table_offsets, strides, radix


def statistic_table(scores, y_true, task_loss):
    """μ(l) = max {θ_y : G(y) = l} of every sequence (see :class:`StatisticTable`).

    Parameters
    ----------
    scores : ChainScores
    y_true : ndarray of shape (n_tokens,), int
    task_loss : CountingLoss
        Bound to its positive states.

    Returns
    -------
    StatisticTable
    """
    flat, sizes, table_offsets, strides, radix = _layout(
        task_loss, y_true, scores.offsets, scores.n_states
    )
    with threads_for(int(sizes.sum()) * scores.n_states**2):
        best = kernels.best_per_statistic(
            *scores._kernel_args(), flat, sizes, table_offsets
        )
    example = np.repeat(np.arange(scores.n_sequences), sizes)
    local = np.arange(table_offsets[-1]) - table_offsets[:-1][example]
    stats = (local[:, None] // strides[example]) % radix[example][:, None]
    return StatisticTable(best, stats, example, table_offsets, (flat, sizes))


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
    table = statistic_table(scores, y_true, task_loss)
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
    targets = table.argmax(values)
    flat, sizes = table._layout
    with threads_for(int(sizes.sum()) * scores.n_states**2):
        return kernels.best_with_statistic(*scores._kernel_args(), flat, sizes, targets)
