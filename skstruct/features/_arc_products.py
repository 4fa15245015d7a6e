"""Full-batch products of arc feature rows with a weight vector, compiled and parallel.

The full-batch objectives of the tree parsers (CRF, SparseMAP) score all arcs, s = X w,
and send the arc gradients back, Xᵀ g, once per evaluation. On UD English EWT X has 245 M
stored entries of value 1.0: the products read ``indices`` only when the rows are binary
(x g = g exactly when x = 1.0, so the sums do not change), never ``data``.

Both products cut the rows into chunks of about equal stored entries, their number set by
the size of X alone (never by the thread count), and hand the chunks to the threads one at
a time (a thread slowed down by another process takes fewer):

- ``X w``: each row's dot product, summed from 0.0 in the order of its entries: the same
  value on any number of threads.
- ``Xᵀ g``: each chunk scatters into its own (n_features,) buffer; the buffers are then
  added in chunk order, in parallel over blocks of columns. The order of every sum is
  fixed by X, so the result is the same on any number of threads.
"""

import numba
import numpy as np
from numba import njit, prange

__all__ = ["arc_matvec", "arc_rmatvec", "row_chunks"]

_NJIT = dict(cache=True, nogil=True)

#: Stored entries per chunk of ``X w`` (a few milliseconds of work).
ENTRIES_PER_CHUNK = 1 << 20

#: Most chunks of ``Xᵀ g``, and most bytes of their buffers together.
MAX_SCATTER_CHUNKS = 4
SCATTER_BUFFER_LIMIT = 128 * 2**20

#: Columns per block of the final sum of ``Xᵀ g``.
_COLUMN_BLOCK = 1 << 16


def row_chunks(indptr, n_chunks):
    """Bounds (n_chunks + 1,) cutting the rows into contiguous chunks of about equal
    stored entries (some may be empty)."""
    n_rows = indptr.shape[0] - 1
    targets = np.linspace(0, indptr[-1], n_chunks + 1)[1:-1]
    inner = np.searchsorted(indptr[:-1], targets, side="left")
    return np.concatenate(([0], np.minimum(inner, n_rows), [n_rows])).astype(np.int64)


@njit(inline="always")
def _unsigned(i):
    """``i`` as an unsigned index: numba wraps negative signed indices around, a compare
    and a select per read or write that these loops, bound by their scattered accesses to
    ``w`` and the buffers, pay for on every entry (1.3-1.5x slower on 40 M entries).
    Mixed signed and unsigned arithmetic gives floats in numba, so loop bounds are
    converted too."""
    return np.uint64(i)


@njit(parallel=True, **_NJIT)
def _matvec(indices, indptr, data, binary, w, bounds):
    n_rows = indptr.shape[0] - 1
    out = np.empty(n_rows)
    for c in prange(bounds.shape[0] - 1):
        for r in range(bounds[c], bounds[c + 1]):
            total = 0.0
            lo, hi = _unsigned(indptr[r]), _unsigned(indptr[r + 1])
            if binary:
                for p in range(lo, hi):
                    total += w[_unsigned(indices[p])]
            else:
                for p in range(lo, hi):
                    total += data[p] * w[_unsigned(indices[p])]
            out[r] = total
    return out


@njit(parallel=True, **_NJIT)
def _gather(w, order):
    """w[order], in parallel (the weights in the order of the rows' column positions)."""
    out = np.empty(order.shape[0])
    for j in prange(order.shape[0]):
        out[j] = w[_unsigned(order[j])]
    return out


@njit(parallel=True, **_NJIT)
def _rmatvec(indices, indptr, data, binary, g, bounds, n_features, order):
    n_chunks = bounds.shape[0] - 1
    partial = np.empty((n_chunks, n_features))
    for c in prange(n_chunks):
        buffer = partial[c]
        buffer[:] = 0.0
        for r in range(bounds[c], bounds[c + 1]):
            value = g[r]
            if value == 0.0:
                continue
            lo, hi = _unsigned(indptr[r]), _unsigned(indptr[r + 1])
            if binary:
                for p in range(lo, hi):
                    buffer[_unsigned(indices[p])] += value
            else:
                for p in range(lo, hi):
                    buffer[_unsigned(indices[p])] += data[p] * value
    out = np.empty(n_features)
    n_blocks = (n_features + _COLUMN_BLOCK - 1) // _COLUMN_BLOCK
    permuted = order.shape[0] > 0
    for block in prange(n_blocks):
        lo = block * _COLUMN_BLOCK
        hi = min(n_features, lo + _COLUMN_BLOCK)
        for c in range(1, n_chunks):
            for j in range(lo, hi):
                partial[0, j] += partial[c, j]
        if permuted:
            for j in range(lo, hi):
                out[_unsigned(order[j])] = partial[0, j]
        else:
            for j in range(lo, hi):
                out[j] = partial[0, j]
    return out


_NO_ORDER = np.zeros(0, dtype=np.int32)


def _values(data, binary):
    return np.empty(0) if binary or data is None else data


def arc_matvec(indices, indptr, data, binary, w, order=None):
    """s = X w for CSR rows (``data`` unread when ``binary``).

    Parameters
    ----------
    indices : ndarray of shape (nnz,), int32 or int64
    indptr : ndarray of shape (n_rows + 1,), int64
    data : ndarray of shape (nnz,), float32 or float64, or None (binary rows)
    binary : bool
        Every stored value is 1.0.
    w : ndarray of shape (n_features,), float64
    order : ndarray of shape (n_features,), int, default=None
        When given, ``indices`` are positions in it: entry p's column is
        ``order[indices[p]]`` (an :class:`~skstruct.utils._trees.ArcRows`'
        ``column_order``).

    Returns
    -------
    ndarray of shape (n_rows,), float64
        s[r] = Σ_{p in row r} x_p w[j_p], summed in the order of the entries.
    """
    n_chunks = int(min(4096, max(1, indptr[-1] // ENTRIES_PER_CHUNK)))
    bounds = row_chunks(indptr, n_chunks)
    w = np.ascontiguousarray(w, dtype=np.float64)
    if order is not None:
        w = _gather(w, order)
    with numba.parallel_chunksize(1):
        return _matvec(indices, indptr, _values(data, binary), bool(binary), w, bounds)


def arc_rmatvec(indices, indptr, data, binary, g, n_features, order=None):
    """Xᵀ g for CSR rows (``data`` unread when ``binary``).

    Parameters
    ----------
    indices, indptr, data, binary
        As in :func:`arc_matvec`.
    g : ndarray of shape (n_rows,)
    n_features : int
    order : ndarray of shape (n_features,), int, default=None
        As in :func:`arc_matvec`: the sums of position j go to column ``order[j]``.

    Returns
    -------
    ndarray of shape (n_features,), float64
        out[j] = Σ_r Σ_{p in row r, j_p = j} x_p g[r]: chunk by chunk in row order, the
        chunks' sums added in chunk order.
    """
    nnz = int(indptr[-1])
    n_chunks = int(max(1, min(MAX_SCATTER_CHUNKS, nnz // ENTRIES_PER_CHUNK,
                              SCATTER_BUFFER_LIMIT // (8 * max(1, n_features)))))
    bounds = row_chunks(indptr, n_chunks)
    g = np.ascontiguousarray(g, dtype=np.float64)
    with numba.parallel_chunksize(1):
        return _rmatvec(indices, indptr, _values(data, binary), bool(binary), g, bounds,
                        int(n_features), _NO_ORDER if order is None else order)
