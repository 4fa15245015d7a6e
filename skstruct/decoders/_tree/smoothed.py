"""The tree family's smoothed oracle: entropy smoothing of the structural hinge of one
sentence (matrix-tree or inside–outside marginals), for the compiled engine's smoothed
solvers (:mod:`skstruct.decoders._engine.smoothed` for the definitions). Trees have no
top-K decoder, so ℓ2 smoothing is not served.
"""

import numpy as np
from numba import njit

from .._core.smoothing import ENTROPY
from .kernels import (
    LINEAR_SPREAD_LIMIT,
    _eisner_inside_outside,
    _matrix_tree_linear,
    _matrix_tree_log,
    max_row_spread,
)
from .oracle import NO_COSTS as _TREE_NO_COSTS
from .oracle import _arc_cost

__all__ = ["supports_smoothed", "tree_log_partition_one", "tree_smoothed"]

_NJIT = dict(cache=True, nogil=True)


def supports_smoothed(compiled_oracle, smoothing):
    """:func:`tree_smoothed` serves arc costs and plain MAP, with entropy smoothing only."""
    return smoothing == ENTROPY


@njit(**_NJIT)
def tree_log_partition_one(block, projective, single_root, marg):
    """log Z of one sentence's arc scores ``block`` (n, n), block[m, h] the score of h
    heading m (the root on the diagonal), and the arc marginals into ``marg`` (n, n):
    what ``TreeDecoder.marginals`` computes for one sentence (inside–outside for
    projective trees, the matrix-tree elimination in linear space when every token's
    scores spread less than ``LINEAR_SPREAD_LIMIT``, in log space otherwise)."""
    if projective:
        return _eisner_inside_outside(block, single_root, True, marg, False)
    if max_row_spread(block) <= LINEAR_SPREAD_LIMIT:
        return _matrix_tree_linear(block, single_root, True, marg)
    return _matrix_tree_log(block, single_root, True, marg)


@njit(**_NJIT)
def tree_smoothed(smoothing, mu, unary, y_i, costs_i, ints, d_unary):
    """:func:`smoothed_oracle` of one sentence (``unary`` (n², 1), modifier-major).

    Entropy only: μ log Z and the arc marginals of the cost-augmented arc scores
    divided by μ. Trees have no top-K decoder, so ℓ2 smoothing raises.
    """
    if smoothing != ENTROPY:
        raise ValueError("trees have no compiled l2-smoothed oracle (no top-K trees): "
                         "use entropy smoothing")
    n = y_i.shape[0]
    kind = ints[2]
    block = np.empty((n, n))
    gold = 0.0
    for m in range(n):
        for h in range(n):
            z = unary[m * n + h, 0]
            if kind != _TREE_NO_COSTS:
                z += _arc_cost(kind, costs_i, y_i, n, m, h)
            block[m, h] = z / mu
            if h == y_i[m]:
                gold += z
    marg = np.zeros((n, n))
    log_z = tree_log_partition_one(block, ints[0] != 0, ints[1] != 0, marg)
    if log_z == -np.inf:
        raise ValueError("no tree of the sentence has a finite score")
    for m in range(n):
        for h in range(n):
            d_unary[m * n + h, 0] = marg[m, h] - (1.0 if h == y_i[m] else 0.0)
    return mu * log_z - gold, True
