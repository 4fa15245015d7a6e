"""Compiled products of a CSR matrix (or its transpose) with a dense matrix."""

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from ..utils import _parallel
from ..utils._parallel import threads_for

__all__ = ["csr_matmul", "csr_transpose_matmul", "matmul", "transpose_matmul"]

#: Largest memory (bytes) for the partial results of the transposed product; above it the
#: product runs over the columns of the matrix instead (no private buffers).
_SCATTER_BUFFER_LIMIT = 256 * 2**20

#: Most chunks of rows of the transposed product, each summed into its own buffer. The
#: number of chunks depends on the size of the product, never on the thread count, so
#: the order of the sums, hence the result, is the same on any number of threads (the
#: same model for any ``n_jobs``).
_MAX_CHUNKS = 8

_NJIT = dict(cache=True, nogil=True)


@njit(parallel=True, **_NJIT)
def _csr_matmul(data, indices, indptr, dense):
    n_rows = indptr.shape[0] - 1
    n_cols = dense.shape[1]
    out = np.zeros((n_rows, n_cols))
    for row in prange(n_rows):
        for p in range(indptr[row], indptr[row + 1]):
            value = data[p]
            col = indices[p]
            for c in range(n_cols):
                out[row, c] += value * dense[col, c]
    return out


@njit(parallel=True, **_NJIT)
def _csr_transpose_matmul(data, indices, indptr, dense, n_out, n_chunks):
    # Each chunk of rows scatters into its own buffer: rows are read in order, and the
    # output (n_out, n_cols) is far smaller than ``dense`` for token-level data.
    n_rows = indptr.shape[0] - 1
    n_cols = dense.shape[1]
    partial = np.zeros((n_chunks, n_out, n_cols))
    step = (n_rows + n_chunks - 1) // n_chunks
    for chunk in prange(n_chunks):
        for row in range(chunk * step, min(n_rows, (chunk + 1) * step)):
            for p in range(indptr[row], indptr[row + 1]):
                value = data[p]
                col = indices[p]
                for c in range(n_cols):
                    partial[chunk, col, c] += value * dense[row, c]
    out = partial[0].copy()
    for chunk in range(1, n_chunks):
        out += partial[chunk]
    return out


def csr_matmul(matrix, dense):
    """``matrix @ dense`` for a CSR ``matrix``, parallel over rows.

    Parameters
    ----------
    matrix : scipy.sparse CSR matrix of shape (n_rows, n_inner)
    dense : ndarray of shape (n_inner, n_cols)

    Returns
    -------
    ndarray of shape (n_rows, n_cols)
    """
    dense = np.ascontiguousarray(dense, dtype=np.float64)
    with threads_for(matrix.nnz * dense.shape[1]):
        return _csr_matmul(matrix.data, matrix.indices, matrix.indptr, dense)


def csr_transpose_matmul(matrix, dense):
    """``matrix.T @ dense`` for a CSR ``matrix``, without forming the transpose.

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
    with threads_for(work):
        n_chunks = max(1, min(_MAX_CHUNKS, matrix.shape[0],
                              work // _parallel.MIN_WORK_PER_THREAD))
        if n_chunks * n_out * dense.shape[1] * 8 > _SCATTER_BUFFER_LIMIT:
            return csr_matmul(matrix.T.tocsr(), dense)
        return _csr_transpose_matmul(
            matrix.data, matrix.indices, matrix.indptr, dense, n_out, n_chunks
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
