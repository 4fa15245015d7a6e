"""Chunks of work for the parallel kernels run under :func:`~._parallel.dynamic_schedule`.

A kernel written for the dynamic schedule has one parallel loop, over contiguous chunks of
its items (examples, sequences, rows, elements), many more chunks than threads, so that a
thread slowed down by another process takes fewer of them. The chunks depend on the input
only, never on the thread count: a kernel that sums over items sums each chunk alone and
then the chunks' sums in chunk order, so its result is the same on any number of threads.

Work is counted as in :data:`~._parallel.MIN_WORK_PER_THREAD` (multiply-adds, about a
nanosecond each).
"""

import numpy as np

from . import _parallel
from ._parallel import token_chunks

__all__ = ["WORK_PER_CHUNK", "even_chunks", "n_work_chunks", "weighted_chunks"]

#: Least work of a chunk (about 65 µs): taking a chunk from the queue costs about a
#: microsecond, so this keeps that cost near 1 %.
WORK_PER_CHUNK = 65_536


def n_work_chunks(work, n_items, min_work=None):
    """Number of chunks of ``n_items`` items that cost ``work`` in all: one per
    ``min_work`` of work (default :data:`WORK_PER_CHUNK`), at most one per item and
    ``MAX_CHUNKS``, at least one.

    Examples
    --------
    >>> n_work_chunks(10 * WORK_PER_CHUNK, 1000)
    10
    >>> n_work_chunks(10 * WORK_PER_CHUNK, 3)
    3
    >>> n_work_chunks(0, 0)
    1
    """
    min_work = WORK_PER_CHUNK if min_work is None else max(1, int(min_work))
    return int(max(1, min(int(n_items), _parallel.MAX_CHUNKS, int(work) // min_work)))


def even_chunks(n_items, work, min_work=None):
    """Bounds of contiguous chunks of about equal numbers of items, for items that cost
    about the same.

    Parameters
    ----------
    n_items : int
    work : int
        Work of all the items.
    min_work : int, optional
        Least work of a chunk (see :func:`n_work_chunks`).

    Returns
    -------
    bounds : ndarray of shape (n_chunks + 1,), int64
        Chunk ``c`` holds items ``bounds[c]:bounds[c + 1]``, never empty when there are
        items; ``bounds[0] = 0``, ``bounds[-1] = n_items``.

    Examples
    --------
    >>> even_chunks(10, 3 * WORK_PER_CHUNK)
    array([ 0,  3,  6, 10])
    """
    n_chunks = n_work_chunks(work, n_items, min_work)
    return np.arange(n_chunks + 1, dtype=np.int64) * int(n_items) // n_chunks


def weighted_chunks(cumulative, scale=1, min_work=None):
    """Bounds of contiguous chunks of about equal work, for items of unequal work.

    Parameters
    ----------
    cumulative : ndarray of shape (n_items + 1,), integer
        Item ``i`` costs ``scale * (cumulative[i + 1] - cumulative[i])`` (offsets of
        sequences, row pointers of a CSR matrix, cumulated costs).
    scale : int, default=1
        Work per unit of ``cumulative``.
    min_work : int, optional
        Least work of a chunk (see :func:`n_work_chunks`).

    Returns
    -------
    bounds : ndarray of shape (n_chunks + 1,), int64
        As :func:`even_chunks`, the cuts placed as in :func:`~._parallel.token_chunks`.

    Examples
    --------
    >>> weighted_chunks(np.array([0, 1, 2, 3, 100]), scale=2000)
    array([0, 2, 3, 4])
    """
    cumulative = np.asarray(cumulative, dtype=np.int64)
    n_items = cumulative.shape[0] - 1
    work = scale * int(cumulative[-1] - cumulative[0]) if n_items > 0 else 0
    return token_chunks(cumulative, n_work_chunks(work, n_items, min_work))
