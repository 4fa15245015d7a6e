"""Statistic-augmented Viterbi: the best chain score for every value of a count statistic.

The state of the dynamic program is (label, value of G so far), where G = Σ_t g_t(y_t) is
an integer statistic flattened to one index per sequence. ``increments[t, s]`` is how far
the flattened index moves when token ``t`` takes state ``s``; ``sizes[i]`` is the number of
values G can take in sequence ``i``. Time O(L S² R) and memory O(S R) per sequence of
length L with R = sizes[i]; the backtracking pass keeps O(L S R).
"""

import numpy as np
from numba import njit, prange

_NJIT = dict(cache=True, nogil=True)


@njit(inline="always")
def _forward_step(prev, cur, unary_t, trans, incr_t, size):
    n_states = prev.shape[0]
    for s in range(n_states):
        shift = incr_t[s]
        for value in range(size):
            cur[s, value] = -np.inf
        for value in range(size - shift):
            top = -np.inf
            for p in range(n_states):
                v = prev[p, value] + trans[p, s]
                if v > top:
                    top = v
            cur[s, value + shift] = top + unary_t[s]


@njit(parallel=True, **_NJIT)
def best_per_statistic(unary, offsets, trans, start, end, increments, sizes, table_offsets):
    """μ(l) = max {θ_y : G(y) = l} for every sequence and statistic value l.

    Returns
    -------
    ndarray of shape (table_offsets[-1],)
        Sequence ``i`` owns entries ``table_offsets[i]:table_offsets[i + 1]``; -inf where no
        labeling reaches that value.
    """
    n_states = unary.shape[1]
    n_seq = offsets.shape[0] - 1
    mu = np.full(table_offsets[-1], -np.inf)
    for seq in prange(n_seq):
        a, b = offsets[seq], offsets[seq + 1]
        size = sizes[seq]
        prev = np.full((n_states, size), -np.inf)
        cur = np.empty((n_states, size))
        for s in range(n_states):
            if increments[a, s] < size:
                prev[s, increments[a, s]] = start[s] + unary[a, s]
        for t in range(a + 1, b):
            _forward_step(prev, cur, unary[t], trans, increments[t], size)
            prev, cur = cur, prev
        base = table_offsets[seq]
        for value in range(size):
            top = -np.inf
            for s in range(n_states):
                top = max(top, prev[s, value] + end[s])
            mu[base + value] = top
    return mu


@njit(parallel=True, **_NJIT)
def best_with_statistic(unary, offsets, trans, start, end, increments, sizes, targets):
    """The best labeling of every sequence among those whose statistic equals ``targets``.

    Returns
    -------
    ndarray of shape (n_tokens,), int64
    """
    n_tokens, n_states = unary.shape
    n_seq = offsets.shape[0] - 1
    labels = np.empty(n_tokens, dtype=np.int64)
    for seq in prange(n_seq):
        a, b = offsets[seq], offsets[seq + 1]
        size = sizes[seq]
        table = np.full((b - a, n_states, size), -np.inf)
        for s in range(n_states):
            if increments[a, s] < size:
                table[0, s, increments[a, s]] = start[s] + unary[a, s]
        for t in range(a + 1, b):
            _forward_step(table[t - a - 1], table[t - a], unary[t], trans, increments[t], size)
        value = targets[seq]
        state = 0
        top = -np.inf
        for s in range(n_states):
            v = table[b - a - 1, s, value] + end[s]
            if v > top:
                top = v
                state = s
        labels[b - 1] = state
        for t in range(b - 1, a, -1):
            value -= increments[t, state]
            best_prev = 0
            top = -np.inf
            for p in range(n_states):
                v = table[t - a - 1, p, value] + trans[p, state]
                if v > top:
                    top = v
                    best_prev = p
            state = best_prev
            labels[t - 1] = state
    return labels
