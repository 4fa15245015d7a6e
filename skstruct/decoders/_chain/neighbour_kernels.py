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


# -- the part differences of every Hamming-1 neighbour ---------------------------------

#: Codes of the part arrays in the entries of :func:`neighbour_differences`.
UNARY, START, TRANSITION, END = 0, 1, 2, 3


@njit(**_NJIT)
def _relabel_entries(unary, trans, start, end, y, seq, base, t, v, bad_y, codes, flats,
                     values):
    """The merged nonzero part differences of relabeling token ``t`` of one chain from
    y_t to ``v``, written into ``codes``, ``flats``, ``values`` (6 slots); returns how
    many, or -1 when the neighbour is not valid (a forbidden part stays or appears).

    ``base`` is the chain's first token in the batch, ``seq`` its index; flat indices
    are into the batch's part arrays (unary (n_tokens, S), start / end (n_seq, S),
    transition (n_seq, S, S))."""
    length, n_states = unary.shape
    current = y[t]
    left_old = start[current] if t == 0 else trans[y[t - 1], current]
    right_old = end[current] if t == length - 1 else trans[current, y[t + 1]]
    bad_old = 0
    for part in (unary[t, current], left_old, right_old):
        if part == -np.inf:
            bad_old += 1
    if bad_old != bad_y:
        return -1
    left = start[v] if t == 0 else trans[y[t - 1], v]
    right = end[v] if t == length - 1 else trans[v, y[t + 1]]
    if unary[t, v] == -np.inf or left == -np.inf or right == -np.inf:
        return -1
    n = 0
    codes[0], flats[0], values[0] = UNARY, (base + t) * n_states + v, 1.0
    codes[1], flats[1], values[1] = UNARY, (base + t) * n_states + current, -1.0
    n = 2
    for side in range(2):
        for sign in range(2):
            label = v if sign == 0 else current
            value = 1.0 if sign == 0 else -1.0
            if side == 0:
                if t == 0:
                    code, flat = START, seq * n_states + label
                else:
                    code = TRANSITION
                    flat = (seq * n_states + y[t - 1]) * n_states + label
            else:
                if t == length - 1:
                    code, flat = END, seq * n_states + label
                else:
                    code = TRANSITION
                    flat = (seq * n_states + label) * n_states + y[t + 1]
            merged = False
            for j in range(n):
                if codes[j] == code and flats[j] == flat:
                    values[j] += value
                    merged = True
                    break
            if not merged:
                codes[n], flats[n], values[n] = code, flat, value
                n += 1
    kept = 0
    for j in range(n):
        if values[j] != 0.0:
            codes[kept], flats[kept], values[kept] = codes[j], flats[j], values[j]
            kept += 1
    return kept


@njit(**_NJIT)
def _bad_parts(unary, trans, start, end, y):
    """How many parts of the labeling ``y`` of one chain are scored -inf."""
    length = unary.shape[0]
    bad = 0
    for t in range(length):
        if unary[t, y[t]] == -np.inf:
            bad += 1
        if t > 0 and trans[y[t - 1], y[t]] == -np.inf:
            bad += 1
    if start[y[0]] == -np.inf:
        bad += 1
    if end[y[length - 1]] == -np.inf:
        bad += 1
    return bad


@njit(parallel=True, **_NJIT)
def neighbour_difference_counts(unary, offsets, trans, start, end, y, rows, nonzeros):
    """Per chain: how many Hamming-1 neighbours of ``y`` are valid (``rows``) and how many
    nonzero part differences they have in all (``nonzeros``)."""
    bounds = token_chunks(offsets, chunk_count_of(offsets))
    n_states = unary.shape[1]
    for chunk in prange(bounds.shape[0] - 1):
        codes = np.empty(6, np.int8)
        flats = np.empty(6, np.int64)
        values = np.empty(6, np.float64)
        for seq in range(bounds[chunk], bounds[chunk + 1]):
            a, b = offsets[seq], offsets[seq + 1]
            bad_y = _bad_parts(unary[a:b], trans, start, end, y[a:b])
            n_rows = 0
            n_nonzero = 0
            for t in range(b - a):
                for v in range(n_states):
                    if v == y[a + t]:
                        continue
                    n = _relabel_entries(unary[a:b], trans, start, end, y[a:b], seq, a, t,
                                         v, bad_y, codes, flats, values)
                    if n >= 0:
                        n_rows += 1
                        n_nonzero += n
            rows[seq] = n_rows
            nonzeros[seq] = n_nonzero


@njit(parallel=True, **_NJIT)
def neighbour_differences(unary, offsets, trans, start, end, y, row_offsets,
                          entry_offsets, positions, entry_rows, entry_codes, entry_flats,
                          entry_values):
    """The part differences of every valid Hamming-1 neighbour of ``y``, in the order of
    :meth:`ChainDecoder.neighbours` (tokens, then their new labels, increasing): row r
    (owned by its chain, rows ``row_offsets[seq]:row_offsets[seq + 1]``) relabels token
    ``positions[r]`` (within the chain) and has the entries ``entry_offsets[seq]``
    onwards: ``entry_rows``, the part array's code, its flat index and the value."""
    bounds = token_chunks(offsets, chunk_count_of(offsets))
    n_states = unary.shape[1]
    for chunk in prange(bounds.shape[0] - 1):
        codes = np.empty(6, np.int8)
        flats = np.empty(6, np.int64)
        values = np.empty(6, np.float64)
        for seq in range(bounds[chunk], bounds[chunk + 1]):
            a, b = offsets[seq], offsets[seq + 1]
            bad_y = _bad_parts(unary[a:b], trans, start, end, y[a:b])
            row = row_offsets[seq]
            entry = entry_offsets[seq]
            for t in range(b - a):
                for v in range(n_states):
                    if v == y[a + t]:
                        continue
                    n = _relabel_entries(unary[a:b], trans, start, end, y[a:b], seq, a, t,
                                         v, bad_y, codes, flats, values)
                    if n < 0:
                        continue
                    positions[row] = t
                    for j in range(n):
                        entry_rows[entry] = row
                        entry_codes[entry] = codes[j]
                        entry_flats[entry] = flats[j]
                        entry_values[entry] = values[j]
                        entry += 1
                    row += 1
