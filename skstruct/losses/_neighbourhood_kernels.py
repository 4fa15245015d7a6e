"""Compiled softmax over the candidate sets {y_i} ∪ N_k(y_i) of the neighbourhood
likelihood, one pass over the candidates of every example."""

import numpy as np
from numba import njit, prange

__all__ = ["neighbourhood_softmax"]


@njit(cache=True, parallel=True)
def neighbourhood_softmax(z, row_offsets, values, p):
    """−log q_i and the candidate probabilities of every example.

    Example ``i`` has the gold output (relative logit 0) and the candidates
    ``row_offsets[i]:row_offsets[i + 1]`` with relative logits z_r = (θ_r − θ_{y_i}) / β.
    Writes

        values[i] = log(1 + Σ_r e^{z_r}) = −log q_i,
        p[r] = e^{z_r} / (1 + Σ_r' e^{z_r'}),

    stably (the largest logit is subtracted first). O(|T_i|) per example.

    Parameters
    ----------
    z : ndarray of shape (n_candidates,), float64
    row_offsets : ndarray of shape (n_examples + 1,), int64
    values : ndarray of shape (n_examples,), float64
        Output.
    p : ndarray of shape (n_candidates,), float64
        Output.
    """
    for i in prange(row_offsets.shape[0] - 1):
        a, b = row_offsets[i], row_offsets[i + 1]
        top = 0.0
        for r in range(a, b):
            if z[r] > top:
                top = z[r]
        total = np.exp(-top)
        for r in range(a, b):
            e = np.exp(z[r] - top)
            p[r] = e
            total += e
        values[i] = top + np.log(total)
        for r in range(a, b):
            p[r] /= total
