"""Compiled products of a CSR matrix with a dense matrix."""

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

__all__ = ["csr_matmul", "matmul"]


@njit(parallel=True, cache=True, nogil=True)
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
    return _csr_matmul(matrix.data, matrix.indices, matrix.indptr, dense)


def matmul(matrix, dense):
    """``matrix @ dense`` for a dense or CSR ``matrix``, as a C-contiguous float64 array."""
    if sp.issparse(matrix):
        return csr_matmul(matrix, dense)
    return np.ascontiguousarray(matrix @ dense)
