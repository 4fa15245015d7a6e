"""Compiled products of a CSR matrix (or its transpose) with a dense matrix."""

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from ..utils import _parallel
from ..utils import _chunks
from ..utils._chunks import n_work_chunks, weighted_chunks
from ..utils._parallel import dynamic_schedule, threads_for, token_chunks

__all__ = ["csr_matmul", "csr_transpose_matmul", "matmul", "transpose_matmul"]

#: Largest memory (bytes) for the partial results of the transposed product; above it the
#: product runs over the columns of the matrix instead (no private buffers).
_SCATTER_BUFFER_LIMIT = 256 * 2**20

#: Most chunks of rows of the transposed product, each summed into its own buffer.
_MAX_CHUNKS = 16

#: Fewest chunks of a transposed product that runs on several threads: with fewer (large
#: buffers for the work), the product runs over the columns of the matrix instead, in as
#: many chunks as its work allows.
_MIN_PARALLEL_CHUNKS = 8

#: Least work of a chunk of the transposed product per entry of its buffer: zeroing the
#: buffer and adding it to the result cost about two passes over it, kept under a quarter
#: of the chunk's own work.
_WORK_PER_BUFFER_ENTRY = 8

#: Additions per parallel iteration when the buffers of the transposed product are summed.
_SUM_BLOCK_WORK = 65_536

_NJIT = dict(cache=True, nogil=True)


@njit(inline="always")
def _unsigned(i):
    """``i`` as an unsigned index: no wraparound test of negative indices on the column
    reads and writes, which keeps the loops over the dense columns from vectorizing
    (see ``features/_chain_crf.py``). Every operand of an index expression is unsigned:
    mixed signed and unsigned arithmetic gives floats in numba."""
    return np.uint64(i)


@njit(parallel=True, **_NJIT)
def _csr_matmul(data, indices, indptr, dense, bounds):
    """``matrix @ dense``, parallel over the chunks of rows ``bounds`` (no other
    parallel loop: the output is written row by row, never zeroed as a whole)."""
    n_rows = indptr.shape[0] - 1
    n_cols = dense.shape[1]
    out = np.empty((n_rows, n_cols))
    for chunk in prange(bounds.shape[0] - 1):
        for row in range(bounds[chunk], bounds[chunk + 1]):
            for c in range(n_cols):
                out[row, c] = 0.0
            for p in range(_unsigned(indptr[row]), _unsigned(indptr[row + 1])):
                value = data[p]
                col = _unsigned(indices[p])
                for c in range(_unsigned(n_cols)):
                    out[row, c] += value * dense[col, c]
    return out


@njit(parallel=True, **_NJIT)
def _scatter_transpose_matmul(data, indices, indptr, dense, n_out, bounds):
    """``matrix.T @ dense``: each chunk of rows (``bounds``) scatters into its own
    buffer, in parallel; then the buffers are added in chunk order, in parallel over
    blocks of output rows, so the result depends on ``bounds`` only."""
    # rows are read in order, and the output (n_out, n_cols) is far smaller than
    # ``dense`` for token-level data
    n_chunks = bounds.shape[0] - 1
    n_cols = dense.shape[1]
    partial = np.empty((n_chunks, n_out, n_cols))
    for chunk in prange(n_chunks):
        buffer = partial[chunk]
        for col in range(n_out):
            for c in range(n_cols):
                buffer[col, c] = 0.0
        for row in range(bounds[chunk], bounds[chunk + 1]):
            for p in range(_unsigned(indptr[row]), _unsigned(indptr[row + 1])):
                value = data[p]
                col = _unsigned(indices[p])
                for c in range(_unsigned(n_cols)):
                    buffer[col, c] += value * dense[row, c]
    out = np.empty((n_out, n_cols))
    block = max(1, _SUM_BLOCK_WORK // max(1, n_chunks * n_cols))
    for b in prange((n_out + block - 1) // block):
        for col in range(b * block, min(n_out, (b + 1) * block)):
            for c in range(n_cols):
                total = partial[0, col, c]
                for chunk in range(1, n_chunks):
                    total += partial[chunk, col, c]
                out[col, c] = total
    return out


def _csr_transpose_matmul(data, indices, indptr, dense, n_out, n_chunks):
    """:func:`_scatter_transpose_matmul` over ``n_chunks`` chunks of rows of about equal
    stored entries."""
    indptr = np.asarray(indptr)
    cumulative = indptr.astype(np.int64) + np.arange(indptr.shape[0])
    bounds = token_chunks(cumulative, max(1, int(n_chunks)))
    return _scatter_transpose_matmul(data, indices, indptr, dense, n_out, bounds)


def _row_chunks(matrix, n_cols):
    """Chunks of rows of about equal stored entries (and rows)."""
    indptr = matrix.indptr.astype(np.int64, copy=False)
    return weighted_chunks(indptr + np.arange(indptr.shape[0]), scale=max(1, n_cols))


def csr_matmul(matrix, dense):
    """``matrix @ dense`` for a CSR ``matrix``, parallel over chunks of rows.

    Parameters
    ----------
    matrix : scipy.sparse CSR matrix of shape (n_rows, n_inner)
    dense : ndarray of shape (n_inner, n_cols)

    Returns
    -------
    ndarray of shape (n_rows, n_cols)
    """
    dense = np.ascontiguousarray(dense, dtype=np.float64)
    bounds = _row_chunks(matrix, dense.shape[1])
    with threads_for(matrix.nnz * dense.shape[1]), dynamic_schedule():
        return _csr_matmul(matrix.data, matrix.indices, matrix.indptr, dense, bounds)


def _transpose_chunks(matrix, n_cols):
    """Chunks of rows of the transposed product: one per ``WORK_PER_CHUNK`` of work and
    per ``_WORK_PER_BUFFER_ENTRY`` times the size of a buffer, at most ``_MAX_CHUNKS``;
    they depend on the product, never on the thread count."""
    buffer = matrix.shape[1] * n_cols
    n_chunks = min(_MAX_CHUNKS, n_work_chunks(
        matrix.nnz * n_cols, matrix.shape[0],
        max(_chunks.WORK_PER_CHUNK, _WORK_PER_BUFFER_ENTRY * buffer)))
    indptr = matrix.indptr.astype(np.int64, copy=False)
    return token_chunks(indptr + np.arange(indptr.shape[0]), n_chunks)


def csr_transpose_matmul(matrix, dense):
    """``matrix.T @ dense`` for a CSR ``matrix``, without forming the transpose when
    its rows can be cut into enough chunks of private buffers.

    A product that uses several threads (``threads_for`` of its work) and would have
    fewer than ``_MIN_PARALLEL_CHUNKS`` chunks, or buffers above
    ``_SCATTER_BUFFER_LIMIT``, runs as :func:`csr_matmul` of the transposed matrix.
    Either way the choice and the chunks depend on the product only, so the result is
    the same on any number of threads.

    Parameters
    ----------
    matrix : scipy.sparse CSR matrix of shape (n_rows, n_out)
    dense : ndarray of shape (n_rows, n_cols)

    Returns
    -------
    ndarray of shape (n_out, n_cols)
    """
    dense = np.ascontiguousarray(dense, dtype=np.float64)
    n_out = matrix.shape[1]
    work = matrix.nnz * dense.shape[1]
    bounds = _transpose_chunks(matrix, dense.shape[1])
    n_chunks = bounds.shape[0] - 1
    parallel = work >= 2 * _parallel.MIN_WORK_PER_THREAD
    if (n_chunks * n_out * dense.shape[1] * 8 > _SCATTER_BUFFER_LIMIT
            or (parallel and n_chunks < _MIN_PARALLEL_CHUNKS)):
        return csr_matmul(matrix.T.tocsr(), dense)
    with threads_for(work), dynamic_schedule():
        return _scatter_transpose_matmul(
            matrix.data, matrix.indices, matrix.indptr, dense, n_out, bounds
        )


def matmul(matrix, dense):
    """``matrix @ dense`` for a dense or CSR ``matrix``, as a C-contiguous float64 array."""
    if sp.issparse(matrix):
        return csr_matmul(matrix, dense)
    return np.ascontiguousarray(matrix @ dense)


def transpose_matmul(matrix, dense):
    """``matrix.T @ dense`` for a dense or CSR ``matrix``."""
    if sp.issparse(matrix):
        return csr_transpose_matmul(matrix, dense)
    return matrix.T @ dense
