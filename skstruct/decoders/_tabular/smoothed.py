"""The smoothed oracles of one class per example and of independent labels, for the
compiled engine's smoothed solvers (:mod:`skstruct.decoders._engine.smoothed` for the
definitions).

* multiclass: any loss (its matrix or mismatch values); softmax, or the K best classes.
* multilabel: per-label costs (``costs_i`` rows of 2 L values, off then on); independent
  sigmoids (the entropy over all 2^L label sets factorizes over labels), or the exact K
  best label sets (:func:`~skstruct.decoders._tabular.kernels.top_k_one`).
"""

import numpy as np
from numba import njit

from .._core.engine_protocol import MAP
from .._core.smoothing import ENTROPY, project_listed
from .kernels import top_k_one as binary_top_k_one
from .oracle import COSTS as _ML_COSTS
from .oracle import MAP_ONLY as _ML_MAP_ONLY
from .oracle import MATRIX as _MC_MATRIX
from .oracle import _class_loss

__all__ = ["multiclass_smoothed", "multilabel_smoothed", "supports_multiclass_smoothed",
           "supports_multilabel_smoothed"]

_NJIT = dict(cache=True, nogil=True)


def supports_multiclass_smoothed(compiled_oracle, smoothing):
    """:func:`multiclass_smoothed` serves every loss and both smoothings."""
    return True


def supports_multilabel_smoothed(compiled_oracle, smoothing):
    """:func:`multilabel_smoothed` serves plain MAP and per-label costs, both smoothings."""
    return compiled_oracle.rescaling == MAP or bool(compiled_oracle.ints[0] == _ML_COSTS)


@njit(**_NJIT)
def multiclass_smoothed(smoothing, mu, top_k, unary, y_i, ints, floats, d_unary):
    """:func:`smoothed_oracle` of one multiclass example (``unary`` (1, C)).

    z_k = θ_k + Δ(y_i, k); entropy: softmax of z / μ; ℓ2: the K best classes (the
    lowest index first among ties, as ``MulticlassDecoder.top_k``).
    """
    row = unary[0]
    n_classes = row.shape[0]
    if ints[0] == _MC_MATRIX and n_classes > ints[1]:
        raise ValueError("the scores have more classes than the task loss's loss matrix")
    gold_class = y_i[0]
    z = np.empty(n_classes)
    top = -np.inf
    for k in range(n_classes):
        z[k] = row[k] + _class_loss(ints, floats, gold_class, k)
        top = max(top, z[k])
    if top == -np.inf:
        raise ValueError("no output of the example has a finite score")
    d = d_unary[0]
    if smoothing == ENTROPY:
        total = 0.0
        for k in range(n_classes):
            d[k] = np.exp((z[k] - top) / mu)
            total += d[k]
        for k in range(n_classes):
            d[k] /= total
        d[gold_class] -= 1.0
        return top + mu * np.log(total) - z[gold_class], True
    listed = np.empty(top_k, dtype=np.int64)
    scores = np.full(top_k, -np.inf)
    for r in range(top_k):
        arg = -1
        best = -np.inf
        for k in range(n_classes):
            if z[k] > best:
                taken = False
                for q in range(r):
                    taken = taken or listed[q] == k
                if not taken:
                    best, arg = z[k], k
        if arg < 0:
            break
        listed[r] = arg
        scores[r] = best
    weights, n_listed, value, exact = project_listed(scores, mu, top_k)
    d[:] = 0.0
    for r in range(n_listed):
        d[listed[r]] += weights[r]
    d[gold_class] -= 1.0
    return value - z[gold_class], exact


@njit(inline="always")
def _softplus(x):
    """log(1 + e^x), without overflow; 0 at -inf."""
    if x > 0.0:
        return x + np.log1p(np.exp(-x))
    return np.log1p(np.exp(x))


@njit(**_NJIT)
def multilabel_smoothed(smoothing, mu, top_k, unary, y_i, costs_i, ints, d_unary):
    """:func:`smoothed_oracle` of one multilabel example (``unary`` (1, L)).

    With s_j = θ_j + c_j(on) − c_j(off), z_y = Σ_j s_j y_j up to a constant that cancels.
    Entropy: the 2^L label sets factorize, μ log Σ_y exp(z_y / μ) = μ Σ_j log(1 +
    exp(s_j / μ)) with marginals σ(s_j / μ); ℓ2: the exact K best label sets
    (:func:`~skstruct.decoders._tabular.kernels.top_k_one`).
    """
    row = unary[0]
    n_labels = row.shape[0]
    method = ints[0]
    if method != _ML_MAP_ONLY and method != _ML_COSTS:
        raise ValueError("the smoothed multilabel oracle needs per-label costs under "
                         "margin rescaling (or no loss)")
    s = np.empty(n_labels)
    gold = 0.0
    for j in range(n_labels):
        s[j] = row[j]
        if method == _ML_COSTS:
            s[j] += costs_i[0, n_labels + j] - costs_i[0, j]
        if y_i[j] != 0:
            gold += s[j]
    d = d_unary[0]
    if smoothing == ENTROPY:
        value = 0.0
        for j in range(n_labels):
            x = s[j] / mu
            value += _softplus(x)
            d[j] = 1.0 / (1.0 + np.exp(-x)) - y_i[j]
        return mu * value - gold, True
    paths = np.full((n_labels, top_k), -1, dtype=np.int64)
    scores = np.full(top_k, -np.inf)
    total = np.empty(2 * top_k)
    scratch = np.empty(6 * top_k, dtype=np.int64)
    binary_top_k_one(s, top_k, paths, scores, total, scratch[:2 * top_k],
                     scratch[2 * top_k:4 * top_k], scratch[4 * top_k:])
    weights, n_listed, value, exact = project_listed(scores, mu, top_k)
    for j in range(n_labels):
        d[j] = -float(y_i[j])
    for r in range(n_listed):
        if weights[r] > 0.0:
            for j in range(n_labels):
                if paths[j, r] != 0:
                    d[j] += weights[r]
    return value - gold, exact
