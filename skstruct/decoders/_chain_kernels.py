"""Compiled dynamic programs over batches of first-order chains.

Every kernel takes the stacked unary scores ``unary`` (n_tokens, n_states), the sequence
``offsets`` (n_sequences + 1,), and the shared ``trans`` (n_states, n_states), ``start`` and
``end`` (n_states,) scores, and runs one sequence per parallel iteration.

Two forward-backward kernels compute the same quantities:

* ``forward_backward_scaled`` works with probabilities rescaled at every position
  (exponentials of the transition scores are taken once per batch, unary exponentials once
  per token). It is exact up to rounding whenever the spread of the transition scores and
  of the end scores is moderate (see ``SCALED_RANGE_LIMIT``), whatever the unary scores.
* ``forward_backward_log`` works in log space throughout and is stable for any finite
  scores, at the price of ``n_states ** 2`` exponentials per token.

A score of -inf forbids a part. A sequence with no labeling of finite score gets
log_z = -inf from every kernel (never NaN), zero marginals, -inf as its best score, and
-1 paths from ``top_k_viterbi``, which never lists a labeling of score -inf.
"""

import numpy as np
from numba import njit, prange

#: Largest spread (max - min) of transition or end scores for which the scaled kernel is
#: used. Intermediate quantities of the scaled recursions are bounded by exp(2 * spread),
#: far from overflow at this limit; beyond it the log-space kernel is used.
SCALED_RANGE_LIMIT = 200.0

_NJIT = dict(cache=True, nogil=True)
# Reassociation lets the sums over states vectorize; no flag assumes finite values.
_FAST = {"reassoc", "contract", "arcp", "nsz"}


@njit(**_NJIT)
def viterbi_one(unary, trans, start, end, delta, back, labels):
    """Best label sequence of one chain: the Viterbi recursion every chain kernel shares.

    Parameters
    ----------
    unary : ndarray of shape (length, n_states)
        Unary scores of the sequence (length >= 1).
    trans : ndarray of shape (n_states, n_states)
    start, end : ndarray of shape (n_states,)
    delta : ndarray of shape (>= length, n_states), float64
        Scratch: best prefix scores.
    back : ndarray of shape (>= length, n_states), integer
        Scratch: back-pointers.
    labels : ndarray of shape (length,), int64
        Output: the best labels.

    Returns
    -------
    float
        The score of the best sequence (-inf when none has a finite score).

    Notes
    -----
    Ties go to the smallest previous state, and at the end to the smallest last state.
    The loop over previous states is outside the loop over current states, so the inner
    loop reads rows of ``trans`` and ``delta`` contiguously and vectorizes (selects, no
    branch); it visits the candidates in the same order as a scan over previous states
    with a strict ``>``, so the result is that scan's.
    """
    length, n_states = unary.shape
    for j in range(n_states):
        delta[0, j] = start[j] + unary[0, j]
    for t in range(1, length):
        top = delta[t]
        arg = back[t]
        previous = delta[t - 1]
        first = previous[0]
        for j in range(n_states):
            top[j] = first + trans[0, j]
            arg[j] = 0
        for i in range(1, n_states):
            d = previous[i]
            row = trans[i]
            for j in range(n_states):
                v = d + row[j]
                better = v > top[j]
                top[j] = v if better else top[j]
                arg[j] = i if better else arg[j]
        for j in range(n_states):
            top[j] += unary[t, j]
    arg_end = 0
    best = delta[length - 1, 0] + end[0]
    for j in range(1, n_states):
        v = delta[length - 1, j] + end[j]
        if v > best:
            best = v
            arg_end = j
    labels[length - 1] = arg_end
    for t in range(length - 1, 0, -1):
        labels[t - 1] = back[t, labels[t]]
    return best


@njit(parallel=True, **_NJIT)
def viterbi(unary, offsets, trans, start, end):
    """Best label sequence of every chain (:func:`viterbi_one` per sequence, in parallel).

    Returns
    -------
    labels : ndarray of shape (n_tokens,), int64
    best : ndarray of shape (n_sequences,)
        The score of each best sequence.
    """
    n_tokens, n_states = unary.shape
    n_seq = offsets.shape[0] - 1
    delta = np.empty((n_tokens, n_states))
    back = np.empty((n_tokens, n_states), dtype=np.int32)
    labels = np.empty(n_tokens, dtype=np.int64)
    best = np.empty(n_seq)
    for seq in prange(n_seq):
        a, b = offsets[seq], offsets[seq + 1]
        best[seq] = viterbi_one(unary[a:b], trans, start, end, delta[a:b], back[a:b],
                                labels[a:b])
    return labels, best


@njit(parallel=True, fastmath=_FAST, **_NJIT)
def forward_backward_scaled(unary, offsets, trans, start, end, with_marginals):
    """Log-partition and marginals with per-position rescaling.

    Returns
    -------
    log_z : ndarray of shape (n_sequences,)
    unary_marginals : ndarray of shape (n_tokens, n_states)
        Empty (0, n_states) when ``with_marginals`` is False.
    trans_marginals : ndarray of shape (n_sequences, n_states, n_states)
        Expected transition counts of each sequence; empty when ``with_marginals`` is False.
    """
    n_tokens, n_states = unary.shape
    n_seq = offsets.shape[0] - 1
    trans_max = _finite_or_zero(trans.max())
    end_max = _finite_or_zero(end.max())
    expo = np.exp(trans - trans_max)
    exp_end = np.exp(end - end_max)
    alpha = np.empty((n_tokens, n_states))
    phi = np.empty((n_tokens, n_states))
    norm = np.empty(n_tokens)
    log_z = np.empty(n_seq)
    marg = np.empty((n_tokens if with_marginals else 0, n_states))
    trans_marg = np.zeros((n_seq if with_marginals else 0, n_states, n_states))
    for seq in prange(n_seq):
        a, b = offsets[seq], offsets[seq + 1]
        # forward: alpha[t] sums to one; log_z collects the log scale factors
        top = start[0] + unary[a, 0]
        for j in range(1, n_states):
            top = max(top, start[j] + unary[a, j])
        total = 0.0
        if top > -np.inf:
            for j in range(n_states):
                phi[a, j] = np.exp(start[j] + unary[a, j] - top)
                total += phi[a, j]
        norm[a] = total
        feasible = total > 0.0
        for j in range(n_states):
            alpha[a, j] = phi[a, j] / total if feasible else 0.0
        acc_log = top + np.log(total) if feasible else -np.inf
        for t in range(a + 1, b):
            if not feasible:
                break
            top = unary[t, 0]
            for j in range(1, n_states):
                top = max(top, unary[t, j])
            for j in range(n_states):
                alpha[t, j] = 0.0
            for i in range(n_states):
                a_i = alpha[t - 1, i]
                for j in range(n_states):
                    alpha[t, j] += a_i * expo[i, j]
            total = 0.0
            if top > -np.inf:
                for j in range(n_states):
                    phi[t, j] = np.exp(unary[t, j] - top)
                    alpha[t, j] *= phi[t, j]
                    total += alpha[t, j]
            norm[t] = total
            feasible = total > 0.0
            if feasible:
                for j in range(n_states):
                    alpha[t, j] /= total
                acc_log += top + trans_max + np.log(total)
        closing = 0.0
        if feasible:
            for j in range(n_states):
                closing += alpha[b - 1, j] * exp_end[j]
        if not closing > 0.0:
            # no labeling of finite score: every one has a part scored -inf
            log_z[seq] = -np.inf
            if with_marginals:
                marg[a:b] = 0.0
            continue
        log_z[seq] = acc_log + end_max + np.log(closing)
        if not with_marginals:
            continue
        # backward with the forward scale factors, so that marg = alpha * beta
        beta = np.empty(n_states)
        weight = np.empty(n_states)
        for j in range(n_states):
            beta[j] = exp_end[j] / closing
            marg[b - 1, j] = alpha[b - 1, j] * beta[j]
        for t in range(b - 1, a, -1):
            inv = 1.0 / norm[t]
            for j in range(n_states):
                weight[j] = phi[t, j] * beta[j] * inv
            for i in range(n_states):
                s = 0.0
                a_i = alpha[t - 1, i]
                for j in range(n_states):
                    p = expo[i, j] * weight[j]
                    s += p
                    trans_marg[seq, i, j] += a_i * p
                beta[i] = s
                marg[t - 1, i] = a_i * s
    return log_z, marg, trans_marg


@njit(inline="always")
def _finite_or_zero(x):
    """``x``, or 0 when it is ±inf: a shift that keeps exp(score - shift) NaN-free."""
    return x if np.isfinite(x) else 0.0


@njit(inline="always")
def _logsumexp_into(values, n):
    top = values[0]
    for i in range(1, n):
        top = max(top, values[i])
    if top == -np.inf:
        return top
    s = 0.0
    for i in range(n):
        s += np.exp(values[i] - top)
    return top + np.log(s)


@njit(parallel=True, **_NJIT)
def forward_backward_log(unary, offsets, trans, start, end, with_marginals):
    """Log-partition and marginals computed in log space (any finite scores, and -inf).

    Same outputs as :func:`forward_backward_scaled`.
    """
    n_tokens, n_states = unary.shape
    n_seq = offsets.shape[0] - 1
    trans_t = np.ascontiguousarray(trans.T)
    log_alpha = np.empty((n_tokens, n_states))
    log_z = np.empty(n_seq)
    n_marg = n_tokens if with_marginals else 0
    log_beta = np.empty((n_marg, n_states))
    marg = np.empty((n_marg, n_states))
    trans_marg = np.zeros((n_seq if with_marginals else 0, n_states, n_states))
    for seq in prange(n_seq):
        a, b = offsets[seq], offsets[seq + 1]
        work = np.empty(n_states)
        for j in range(n_states):
            log_alpha[a, j] = start[j] + unary[a, j]
        for t in range(a + 1, b):
            for j in range(n_states):
                for i in range(n_states):
                    work[i] = log_alpha[t - 1, i] + trans_t[j, i]
                log_alpha[t, j] = _logsumexp_into(work, n_states) + unary[t, j]
        for j in range(n_states):
            work[j] = log_alpha[b - 1, j] + end[j]
        lz = _logsumexp_into(work, n_states)
        log_z[seq] = lz
        if not with_marginals:
            continue
        if lz == -np.inf:
            marg[a:b] = 0.0
            continue
        for j in range(n_states):
            log_beta[b - 1, j] = end[j]
        for t in range(b - 1, a, -1):
            for i in range(n_states):
                for j in range(n_states):
                    work[j] = trans[i, j] + unary[t, j] + log_beta[t, j]
                    trans_marg[seq, i, j] += np.exp(log_alpha[t - 1, i] + work[j] - lz)
                log_beta[t - 1, i] = _logsumexp_into(work, n_states)
        for t in range(a, b):
            for j in range(n_states):
                marg[t, j] = np.exp(log_alpha[t, j] + log_beta[t, j] - lz)
    if not with_marginals:
        marg = np.empty((0, n_states))
    return log_z, marg, trans_marg


@njit(**_NJIT)
def top_k_one(unary, trans, start, end, k, paths, scores):
    """The ``k`` best distinct label sequences of one chain (list Viterbi).

    Parameters
    ----------
    unary : ndarray of shape (length, n_states)
    trans, start, end
        As for :func:`viterbi_one`.
    k : int
    paths : ndarray of shape (length, k), int64
        Output, filled with -1 beforehand: column ``r`` receives the ``r``-th best sequence.
    scores : ndarray of shape (k,)
        Output, filled with -inf beforehand.
    """
    length, n_states = unary.shape
    value = np.full((length, n_states, k), -np.inf)
    prev_state = np.zeros((length, n_states, k), dtype=np.int32)
    prev_rank = np.zeros((length, n_states, k), dtype=np.int32)
    count = np.zeros((length, n_states), dtype=np.int32)
    head = np.zeros(n_states, dtype=np.int32)
    for j in range(n_states):
        value[0, j, 0] = start[j] + unary[0, j]
        count[0, j] = 1 if value[0, j, 0] > -np.inf else 0
    for t in range(1, length):
        for j in range(n_states):
            if unary[t, j] == -np.inf:
                continue
            head[:] = 0
            for r in range(k):
                arg = -1
                top = -np.inf
                for i in range(n_states):
                    if head[i] < count[t - 1, i]:
                        v = value[t - 1, i, head[i]] + trans[i, j]
                        if v > top:
                            top = v
                            arg = i
                if arg < 0:
                    break
                value[t, j, r] = top + unary[t, j]
                prev_state[t, j, r] = arg
                prev_rank[t, j, r] = head[arg]
                head[arg] += 1
                count[t, j] = r + 1
    head[:] = 0
    for r in range(k):
        arg = -1
        top = -np.inf
        for j in range(n_states):
            if head[j] < count[length - 1, j]:
                v = value[length - 1, j, head[j]] + end[j]
                if v > top:
                    top = v
                    arg = j
        if arg < 0:
            break
        scores[r] = top
        state, rank = arg, head[arg]
        head[arg] += 1
        for t in range(length - 1, -1, -1):
            paths[t, r] = state
            if t > 0:
                state, rank = prev_state[t, state, rank], prev_rank[t, state, rank]


@njit(parallel=True, **_NJIT)
def top_k_viterbi(unary, offsets, trans, start, end, k):
    """The ``k`` best distinct label sequences of every chain (list Viterbi).

    Each (position, state) keeps its ``k`` best prefixes; the ``k`` best extensions into a
    state are a ``k``-way merge of the predecessors' sorted lists, O(k * n_states) each.
    Only prefixes of finite score are kept, so a labeling with a part scored -inf is
    never listed. One sequence per parallel iteration, by :func:`top_k_one`.

    Returns
    -------
    paths : ndarray of shape (n_tokens, k), int64
        Column ``r`` holds the ``r``-th best sequence; -1 where fewer exist.
    scores : ndarray of shape (n_sequences, k)
        Sorted in decreasing order; -inf where fewer than ``k`` sequences exist.
    """
    n_tokens, n_states = unary.shape
    n_seq = offsets.shape[0] - 1
    paths = np.full((n_tokens, k), -1, dtype=np.int64)
    scores = np.full((n_seq, k), -np.inf)
    for seq in prange(n_seq):
        a, b = offsets[seq], offsets[seq + 1]
        top_k_one(unary[a:b], trans, start, end, k, paths[a:b], scores[seq])
    return paths, scores
