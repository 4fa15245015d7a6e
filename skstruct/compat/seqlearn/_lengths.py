"""seqlearn's stacked form (one matrix, flat labels, lengths) and skstruct's lists."""

import numpy as np
import scipy.sparse as sp


def split_sequences(X, lengths, y=None):
    """Cut the stacked rows of ``X`` (and ``y``) into one block per sequence.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_tokens, n_features)
    lengths : array-like of int of shape (n_sequences,) or None
        None: ``X`` is one sequence.
    y : array-like of shape (n_tokens,), default=None

    Returns
    -------
    X_list : list of n_sequences arrays or CSR matrices
    y_list : list of n_sequences arrays, or None
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X)
    else:
        X = np.asarray(X)
        if X.ndim == 1:
            X = X.reshape(-1, 1)
    n_tokens = X.shape[0]
    if lengths is None:
        lengths = [n_tokens]
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or not np.issubdtype(lengths.dtype, np.integer) \
            or np.any(lengths < 1):
        raise ValueError("lengths must be a 1-D array of positive integers.")
    if lengths.sum() != n_tokens:
        raise ValueError(f"The lengths sum to {lengths.sum()}, but X has {n_tokens} rows.")
    end = np.cumsum(lengths)
    start = end - lengths
    X_list = [X[a:b] for a, b in zip(start, end)]
    if y is None:
        return X_list, None
    y = np.asarray(y)
    if y.shape[0] != n_tokens:
        raise ValueError(f"y has {y.shape[0]} labels, but X has {n_tokens} rows.")
    return X_list, [y[a:b] for a, b in zip(start, end)]
