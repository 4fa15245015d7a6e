"""Count-statistic tables: the best score at every value of a count statistic.

The exact loss-augmented inference of count-statistic losses (chains:
:mod:`skstruct.decoders._chain.counting`; independent labels:
:mod:`skstruct.decoders._tabular.multilabel`) first tabulates μ(l) = max {θ_y : G(y) = l}
for every value l of the statistic G, then maximizes H(μ(l), l) over l. This module holds
the table, its memory limit and the check that H is non-decreasing in the score.
"""

import numpy as np

__all__ = ["DEFAULT_MAX_TABLE_MEMORY", "StatisticTable", "TableMemoryError"]


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


#: Default of ``ChainDecoder(max_table_memory=...)``: 2 GiB.
DEFAULT_MAX_TABLE_MEMORY = 2 * 1024**3

#: Bytes per statistic value of the table's arrays on the Python side (scores, counter
#: values, owners, objective values and temporaries), on top of 16 per counter.
_TABLE_BYTES_PER_VALUE = 64


class TableMemoryError(MemoryError, ValueError):
    """Constrained message passing would need more memory than ``max_table_memory``.

    A :class:`MemoryError` (memory is what is missing) and a :class:`ValueError` (the
    sequence is too long for the configured limit, a property of the input and of a
    parameter), so that it is caught as either.
    """


def _format_bytes(n_bytes):
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n_bytes >= size:
            return f"{n_bytes / size:.2f} {unit}"
    return f"{int(n_bytes)} bytes"


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
