"""The chain family's smoothed oracle: entropy or ℓ2 smoothing of the structural hinge of
one sequence, for the compiled engine's smoothed solvers
(:mod:`skstruct.decoders._engine.smoothed` for the definitions).

Entropy by the rescaled forward–backward
(:func:`~skstruct.decoders._chain.kernels.scaled_forward_backward_one`), in log space when
the transition or end scores divided by μ spread beyond ``SCALED_RANGE_LIMIT`` or forbid a
part, as :class:`~skstruct.decoders.ChainDecoder` decides; ℓ2 by list Viterbi
(:func:`~skstruct.decoders._chain.kernels.top_k_one`). The Hamming loss (plain, normalized,
with class costs) is read from ``ints`` / ``floats``.
"""

import numpy as np
from numba import njit

from .._core.smoothing import ENTROPY, project_listed
from .kernels import (
    SCALED_RANGE_LIMIT,
    forward_backward_log_one,
    padded_width,
    scaled_forward_backward_one,
    scaled_pairwise,
    top_k_one,
)
from .oracle import (
    CONSTRAINED,
    HAMMING,
    LOSS,
    NO_LOSS,
    NORMALIZE,
    SEARCH,
    VITERBI,
    _hamming_cost,
    chain_add_parts,
    constrained_pair,
)

__all__ = ["chain_smoothed", "supports_smoothed"]

_NJIT = dict(cache=True, nogil=True)

# The chain's parts are laid out by its shape alone: add_parts reads no parameters.
_NO_INTS = np.zeros(0, dtype=np.int64)


def supports_smoothed(compiled_oracle, smoothing):
    """Whether :func:`chain_smoothed` serves ``compiled_oracle`` (margin rescaling or plain
    MAP): plain MAP and the Hamming loss (plain, normalized or with class costs) with
    Viterbi search; a decoder's constraints are served too. Both smoothings."""
    loss = compiled_oracle.ints[LOSS] & (CONSTRAINED - 1)
    return bool(loss == NO_LOSS or (loss == HAMMING and compiled_oracle.ints[SEARCH] == VITERBI))


@njit(**_NJIT)
def _chain_augmented(unary, y_i, ints, floats):
    """z's unary scores: unary + the Hamming cost of every (token, state)."""
    length, n_states = unary.shape
    augmented = np.empty((length, n_states))
    loss = ints[LOSS] & (CONSTRAINED - 1)
    if loss != NO_LOSS and not (loss == HAMMING and ints[SEARCH] == VITERBI):
        raise ValueError("the smoothed chain oracle needs a Hamming loss under margin "
                         "rescaling (or no loss)")
    scale = 1.0 / length if ints[NORMALIZE] else 1.0
    for t in range(length):
        for s in range(n_states):
            cost = 0.0 if loss == NO_LOSS else _hamming_cost(ints, floats, y_i[t], s, scale)
            augmented[t, s] = unary[t, s] + cost
    return augmented


@njit(**_NJIT)
def _chain_gold(augmented, pair, y_i):
    """z_{y_i}: the gold labels scored with the augmented unary scores."""
    length, n_states = augmented.shape
    square = n_states * n_states
    total = pair[square + y_i[0]] + pair[square + n_states + y_i[length - 1]]
    for t in range(length):
        total += augmented[t, y_i[t]]
    for t in range(1, length):
        total += pair[y_i[t - 1] * n_states + y_i[t]]
    return total


@njit(**_NJIT)
def chain_smoothed(smoothing, mu, top_k, unary, pair, y_i, ints, floats, d_unary, d_pair):
    """:func:`smoothed_oracle` of one chain (``unary`` (L, S), ``pair`` (S² + 2S,)).

    A decoder's constraints (the :data:`CONSTRAINED` bit of ``ints[LOSS]``) score the
    forbidden transitions, first and last states -inf; their gradient entries are 0.
    """
    pair = constrained_pair(pair, ints, floats)
    augmented = _chain_augmented(unary, y_i, ints, floats)
    gold = _chain_gold(augmented, pair, y_i)
    if smoothing == ENTROPY:
        return _chain_entropy(augmented, pair, y_i, mu, d_unary, d_pair) - gold, True
    value, exact = _chain_l2(augmented, pair, y_i, mu, top_k, d_unary, d_pair)
    return value - gold, exact


@njit(**_NJIT)
def _scaled_range_ok(values):
    """Whether ``values`` are finite with a spread within ``SCALED_RANGE_LIMIT``."""
    low = np.inf
    high = -np.inf
    for v in values:
        if not np.isfinite(v):
            return False
        low = min(low, v)
        high = max(high, v)
    return high - low <= SCALED_RANGE_LIMIT


@njit(**_NJIT)
def _chain_entropy(augmented, pair, y_i, mu, d_unary, d_pair):
    """μ log Z(z / μ); marginals minus the gold indicators into d. Returns μ log Z."""
    length, n_states = augmented.shape
    square = n_states * n_states
    inv_mu = 1.0 / mu
    scaled_pair = np.empty(square + 2 * n_states)
    for j in range(scaled_pair.shape[0]):
        scaled_pair[j] = pair[j] * inv_mu
    trans = scaled_pair[:square].reshape((n_states, n_states))
    start = scaled_pair[square:square + n_states]
    end = scaled_pair[square + n_states:]
    if not (_scaled_range_ok(scaled_pair[:square]) and _scaled_range_ok(end)):
        log_z = _log_forward_backward(augmented, inv_mu, trans, start, end, y_i, d_unary,
                                      d_pair)
        if log_z == -np.inf:
            raise ValueError("no labeling of the sequence has a finite score")
        return mu * log_z
    width = padded_width(n_states)
    expo, expo_t, start_padded, exp_end, trans_max, end_max = scaled_pairwise(
        trans, start, end, width)
    rows = np.empty((length, width))
    for t in range(length):
        for s in range(n_states):
            rows[t, s] = augmented[t, s] * inv_mu
        for s in range(n_states, width):
            rows[t, s] = -np.inf
    alpha = np.empty((length, width))
    norm = np.empty(length)
    beta = np.empty((1, width))
    weight = np.empty((1, width))
    counts = np.zeros((width, width))
    log_z = scaled_forward_backward_one(
        rows, 0, length, n_states, expo, expo_t, start_padded, exp_end, trans_max, end_max,
        alpha, norm, beta, weight, y_i, 1.0, counts, True)
    if log_z == -np.inf:
        raise ValueError("no labeling of the sequence has a finite score")
    for t in range(length):
        for s in range(n_states):
            d_unary[t, s] = rows[t, s]
    for i in range(n_states):
        for j in range(n_states):
            d_pair[i * n_states + j] = expo[i, j] * counts[i, j]
    for t in range(1, length):
        d_pair[y_i[t - 1] * n_states + y_i[t]] -= 1.0
    # rows 0 and L - 1 already hold p(y_0 = j) − [j = y_0] and p(y_{L-1} = j) − [...]
    for j in range(n_states):
        d_pair[square + j] = rows[0, j]
        d_pair[square + n_states + j] = rows[length - 1, j]
    return mu * log_z


@njit(**_NJIT)
def _log_forward_backward(augmented, inv_mu, trans, start, end, y_i, d_unary, d_pair):
    """The decoder's log-space forward–backward (:func:`forward_backward_log_one`) of the
    scores (augmented * inv_mu, trans, start, end), any finite or -inf scores; marginals
    minus the gold indicators into d. Returns log Z (-inf when no labeling has a finite
    score; d is then left as it is)."""
    length, n_states = augmented.shape
    square = n_states * n_states
    scaled = np.empty((length, n_states))
    for t in range(length):
        for j in range(n_states):
            scaled[t, j] = augmented[t, j] * inv_mu
    log_z = np.empty(1)
    marg = np.empty((length, n_states))
    trans_marg = np.empty((1, n_states, n_states))
    forward_backward_log_one(scaled, np.array([0, length]), 0, trans, trans.T.copy(), start,
                             end, True, np.empty((length, n_states)),
                             np.empty((length, n_states)), log_z, marg, trans_marg)
    if log_z[0] == -np.inf:
        return log_z[0]
    for t in range(length):
        for j in range(n_states):
            d_unary[t, j] = marg[t, j]
        d_unary[t, y_i[t]] -= 1.0
    for i in range(n_states):
        for j in range(n_states):
            d_pair[i * n_states + j] = trans_marg[0, i, j]
    for t in range(1, length):
        d_pair[y_i[t - 1] * n_states + y_i[t]] -= 1.0
    for j in range(n_states):
        d_pair[square + j] = d_unary[0, j]
        d_pair[square + n_states + j] = d_unary[length - 1, j]
    return log_z[0]


@njit(**_NJIT)
def _chain_l2(augmented, pair, y_i, mu, top_k, d_unary, d_pair):
    """⟨q, z⟩ − (μ/2)‖q‖² over the K best labelings; Σ q_r a_r − a_{y_i} into d."""
    length, n_states = augmented.shape
    square = n_states * n_states
    trans = pair[:square].reshape((n_states, n_states))
    start = pair[square:square + n_states]
    end = pair[square + n_states:square + 2 * n_states]
    paths = np.full((length, top_k), -1, dtype=np.int64)
    scores = np.full(top_k, -np.inf)
    top_k_one(augmented, trans, start, end, top_k, paths, scores)
    weights, n_listed, value, exact = project_listed(scores, mu, top_k)
    d_unary[:length] = 0.0
    d_pair[:] = 0.0
    labels = np.empty(length, dtype=np.int64)
    for r in range(n_listed):
        if weights[r] > 0.0:
            for t in range(length):
                labels[t] = paths[t, r]
            chain_add_parts(labels, weights[r], d_unary[:length], d_pair, _NO_INTS)
    chain_add_parts(y_i, -1.0, d_unary[:length], d_pair, _NO_INTS)
    return value, exact
