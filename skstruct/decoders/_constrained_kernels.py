"""Statistic-augmented Viterbi: the best chain score for every value of a count statistic.

The statistic is a vector of K counters G = (G_1 .. G_K) with G_k = min(Σ_t g_tk(y_t),
cap_k): each token adds ``increments[t, s, k]`` to counter k when it takes state s, and a
counter stops at its cap (caps as large as the sequence length never bind). The counters
of sequence i are flattened to one index l in mixed radix (cap_k + 1), most significant
first. The dynamic program runs over (state, l): O(L S² R K) time and O(S R) memory per
sequence of length L with R = Π_k (cap_k + 1) values; the backtracking pass keeps
O(L S R) back-pointers.
"""

import numpy as np
from numba import njit, prange

_NJIT = dict(cache=True, nogil=True)


@njit(inline="always")
def _digits(radix):
    """Counter values of every flattened index: shape (R, K)."""
    n_counters = radix.shape[0]
    size = 1
    for k in range(n_counters):
        size *= radix[k]
    digits = np.empty((size, n_counters), dtype=np.int64)
    for value in range(size):
        rest = value
        for k in range(n_counters - 1, -1, -1):
            digits[value, k] = rest % radix[k]
            rest //= radix[k]
    return digits


@njit(inline="always")
def _advance(digits, value, incr_ts, radix):
    """Flattened index after adding ``incr_ts`` to the counters of ``value``, capped."""
    out = 0
    for k in range(radix.shape[0]):
        out = out * radix[k] + min(digits[value, k] + incr_ts[k], radix[k] - 1)
    return out


@njit(inline="always")
def _first_step(table0, unary_a, start, incr_a, digits, radix):
    for s in range(table0.shape[0]):
        table0[s, _advance(digits, 0, incr_a[s], radix)] = start[s] + unary_a[s]


@njit(inline="always")
def _step(prev, cur, unary_t, trans, incr_t, digits, radix, back_state, back_value):
    n_states, size = prev.shape
    cur[:, :] = -np.inf
    for s in range(n_states):
        for value in range(size):
            top = -np.inf
            arg = 0
            for p in range(n_states):
                v = prev[p, value] + trans[p, s]
                if v > top:
                    top = v
                    arg = p
            if top == -np.inf:
                continue
            target = _advance(digits, value, incr_t[s], radix)
            v = top + unary_t[s]
            if v > cur[s, target]:
                cur[s, target] = v
                if back_state.shape[0] > 0:
                    back_state[s, target] = arg
                    back_value[s, target] = value


@njit(parallel=True, **_NJIT)
def best_per_statistic(unary, offsets, trans, start, end, increments, radix, table_offsets):
    """μ(l) = max {θ_y : G(y) = l} for every sequence and statistic value l.

    Parameters
    ----------
    increments : ndarray of shape (n_tokens, n_states, K), int64
    radix : ndarray of shape (n_sequences, K), int64
        cap + 1 of every counter of every sequence.
    table_offsets : ndarray of shape (n_sequences + 1,)
        Cumulated Π_k radix[i, k].

    Returns
    -------
    ndarray of shape (table_offsets[-1],)
        Sequence ``i`` owns entries ``table_offsets[i]:table_offsets[i + 1]``; -inf where no
        labeling reaches that value.
    """
    n_states = unary.shape[1]
    n_seq = offsets.shape[0] - 1
    mu = np.full(table_offsets[-1], -np.inf)
    no_back = np.empty((0, 0), dtype=np.int64)
    for seq in prange(n_seq):
        a, b = offsets[seq], offsets[seq + 1]
        size = table_offsets[seq + 1] - table_offsets[seq]
        digits = _digits(radix[seq])
        prev = np.full((n_states, size), -np.inf)
        cur = np.empty((n_states, size))
        _first_step(prev, unary[a], start, increments[a], digits, radix[seq])
        for t in range(a + 1, b):
            _step(prev, cur, unary[t], trans, increments[t], digits, radix[seq], no_back,
                  no_back)
            prev, cur = cur, prev
        base = table_offsets[seq]
        for value in range(size):
            top = -np.inf
            for s in range(n_states):
                top = max(top, prev[s, value] + end[s])
            mu[base + value] = top
    return mu


@njit(parallel=True, **_NJIT)
def best_with_statistic(unary, offsets, trans, start, end, increments, radix, targets):
    """The best labeling of every sequence among those whose statistic equals ``targets``.

    ``targets[i]`` must be reachable (μ(targets[i]) finite).

    Returns
    -------
    ndarray of shape (n_tokens,), int64
    """
    n_tokens, n_states = unary.shape
    n_seq = offsets.shape[0] - 1
    labels = np.empty(n_tokens, dtype=np.int64)
    for seq in prange(n_seq):
        a, b = offsets[seq], offsets[seq + 1]
        digits = _digits(radix[seq])
        size = digits.shape[0]
        table = np.full((b - a, n_states, size), -np.inf)
        back_state = np.zeros((b - a, n_states, size), dtype=np.int64)
        back_value = np.zeros((b - a, n_states, size), dtype=np.int64)
        _first_step(table[0], unary[a], start, increments[a], digits, radix[seq])
        for t in range(a + 1, b):
            _step(table[t - a - 1], table[t - a], unary[t], trans, increments[t], digits,
                  radix[seq], back_state[t - a], back_value[t - a])
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
            state, value = back_state[t - a, state, value], back_value[t - a, state, value]
            labels[t - 1] = state
    return labels
