"""What the smoothed oracles of every family share: the smoothing codes and the ℓ2
projection over a list of the K best cost-augmented outputs."""

import numpy as np
from numba import njit

from ...losses._smoothed import project_sorted_row

__all__ = ["ENTROPY", "L2", "project_listed"]

_NJIT = dict(cache=True, nogil=True)

#: Smoothing codes.
ENTROPY = 0
L2 = 1


@njit(**_NJIT)
def project_listed(scores, mu, top_k):
    """The weights of the listed scores (sorted, -inf beyond them), the ℓ2 part of the
    value ⟨q, z⟩ − (μ/2)‖q‖², and the certificate. Raises when nothing is listed."""
    n_listed = 0
    while n_listed < top_k and scores[n_listed] > -np.inf:
        n_listed += 1
    if n_listed == 0:
        raise ValueError("no output of the example has a finite score")
    values = np.empty(top_k)
    for r in range(n_listed):
        values[r] = scores[r] / mu
    weights = np.empty(top_k)
    _, support = project_sorted_row(values, n_listed, weights)
    value = 0.0
    for r in range(n_listed):
        value += weights[r] * (scores[r] - 0.5 * mu * weights[r])
    return weights, n_listed, value, support < top_k
