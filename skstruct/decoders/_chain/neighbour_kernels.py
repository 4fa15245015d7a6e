"""Compiled best-neighbour scan over batches of first-order chains (Hamming radius 1).

The proposal of :class:`~skstruct.PerturbedMAPClassifier` (Algorithm 1 of Ghoshal &
Honorio 2019) scans the Hamming-1 neighbourhood of a start labeling y in the order of
:mod:`skstruct.decoders._core.sampling` (positions t = 0, 1, ..., L − 1; at each the labels
v ≠ y_t increasing) and keeps y ← y' whenever θ(y') ≥ θ(y). It ends at the last
neighbour of largest score when that score is at least θ(start), else at the start.

Relabeling token t from y_t to v changes only the parts that touch t, so

    θ(y') − θ(y) = Δ_t(v) − Δ_t(y_t),
    Δ_t(v) = unary[t, v] + left_t(v) + right_t(v),

with left_t(v) = start[v] when t = 0, else trans[y_{t−1}, v], and right_t(v) = end[v]
when t = L − 1, else trans[v, y_{t+1}]. The scan is O(L S) per sequence instead of the
O(L² S) of listing every neighbour and scoring it.

A score of -inf forbids a part. A neighbour is valid (finite score) when every part of y
scored -inf touches t and no new part at t is -inf. When y itself is invalid (θ(y) =
-inf) every valid neighbour beats it; the neighbours are then compared by their finite
scores, which differ from one another by Δ_t(v) − Δ_t^finite(y_t) (the finite old parts
at t) plus a constant.
"""

import numpy as np
from numba import njit, prange

from ...utils._parallel import token_chunks
from .kernels import chunk_count_of

_NJIT = dict(cache=True, nogil=True)


@njit(**_NJIT)
def best_neighbour_one(unary, trans, start, end, y, theta_y, out):
    """The scan's result for one chain; writes it into ``out`` and returns its score.

    Parameters
    ----------
    unary : ndarray of shape (length, n_states)
    trans : ndarray of shape (n_states, n_states)
    start, end : ndarray of shape (n_states,)
    y : ndarray of shape (length,), int64
        The start labeling.
    theta_y : float
        θ(y) as the caller computed it (-inf when y has a forbidden part); the score
        returned for a move is ``theta_y`` plus the move's difference, so that it agrees
        with the caller's scores.
    out : ndarray of shape (length,), int64
        Receives the result (y itself when no neighbour is kept).

    Returns
    -------
    float
        θ of the result.
    """
    length, n_states = unary.shape
    # the forbidden parts of y and the sum of its finite parts
    bad_y = 0
    finite_y = 0.0
    for t in range(length):
        out[t] = y[t]
        part = unary[t, y[t]]
        if part == -np.inf:
            bad_y += 1
        else:
            finite_y += part
        if t > 0:
            part = trans[y[t - 1], y[t]]
            if part == -np.inf:
                bad_y += 1
            else:
                finite_y += part
    for part in (start[y[0]], end[y[length - 1]]):
        if part == -np.inf:
            bad_y += 1
        else:
            finite_y += part
    best_delta = -np.inf
    best_t = -1
    best_v = -1
    for t in range(length):
        current = y[t]
        # the parts of y touching t: how many are forbidden, the sum of the others
        bad_old = 0
        finite_old = 0.0
        left = start[current] if t == 0 else trans[y[t - 1], current]
        right = end[current] if t == length - 1 else trans[current, y[t + 1]]
        for part in (unary[t, current], left, right):
            if part == -np.inf:
                bad_old += 1
            else:
                finite_old += part
        if bad_old != bad_y:
            continue  # a forbidden part of y away from t stays in every neighbour at t
        for v in range(n_states):
            if v == current:
                continue
            left = start[v] if t == 0 else trans[y[t - 1], v]
            right = end[v] if t == length - 1 else trans[v, y[t + 1]]
            new = unary[t, v] + left + right
            if new == -np.inf:
                continue
            delta = new - finite_old
            if delta >= best_delta:
                best_delta = delta
                best_t = t
                best_v = v
    if best_t < 0:
        return theta_y
    if bad_y == 0:
        if best_delta < 0.0:
            return theta_y
        out[best_t] = best_v
        return theta_y + best_delta
    out[best_t] = best_v
    return finite_y + best_delta


@njit(parallel=True, **_NJIT)
def best_neighbour(unary, offsets, trans, start, end, y, theta_y, out, out_theta):
    """:func:`best_neighbour_one` for every chain, chunks of sequences per parallel
    iteration.

    Parameters
    ----------
    unary : ndarray of shape (n_tokens, n_states)
    offsets : ndarray of shape (n_sequences + 1,)
    trans : ndarray of shape (n_states, n_states)
    start, end : ndarray of shape (n_states,)
    y : ndarray of shape (n_tokens,), int64
        The start labelings, stacked.
    theta_y : ndarray of shape (n_sequences,)
        Their scores.
    out : ndarray of shape (n_tokens,), int64
        Receives the results, stacked.
    out_theta : ndarray of shape (n_sequences,)
        Receives their scores.
    """
    bounds = token_chunks(offsets, chunk_count_of(offsets))
    for chunk in prange(bounds.shape[0] - 1):
        for seq in range(bounds[chunk], bounds[chunk + 1]):
            a, b = offsets[seq], offsets[seq + 1]
            out_theta[seq] = best_neighbour_one(unary[a:b], trans, start, end, y[a:b],
                                                theta_y[seq], out[a:b])
