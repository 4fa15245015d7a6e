"""Compiled kernels of k-subsets: elementary symmetric polynomials in log space and the
``K`` best subsets.

With label scores θ_1 .. θ_L of one example, the subsets of exactly k labels have the
partition function Z = e_k(exp θ_1, .., exp θ_L), the elementary symmetric polynomial of
degree k. It is computed in log space by the recursion over labels

.. math:: F_j[m] = \\operatorname{logaddexp}(F_{j-1}[m], F_{j-1}[m-1] + θ_j),

with F_j[m] = log e_m(exp θ_1, .., exp θ_j), and the same recursion from the right,
B_j[r] = log e_r(exp θ_j, .., exp θ_L). The marginal of label j is

.. math:: p(y_j = 1) = \\sum_{m=0}^{k-1} \\exp(F_{j-1}[m] + θ_j + B_{j+1}[k-1-m] − \\log Z):

O(L k) time per example for both.

The ``K`` best subsets: with the labels sorted by decreasing score, a subset is the
sorted positions p_0 < .. < p_{k-1} of its labels, the best one p_i = i. The elements
that moved from the best positions form a suffix, and every subset is reached from the
best one by exactly one path of moves: move the last element right one position at a
time to its place, then the element before it, and so on. A move never raises the score,
so a best-first search (a heap) over the states (positions, active element, limit) pops
the subsets in non-increasing order of score: a pop pushes at most two states (move the
active element once more; or activate the previous element by moving it one position),
so the ``K`` best cost O(L log L + K (k + log K)) after the sort.
"""

import numpy as np
from numba import njit, prange

from .kernels import _pop, _push

_NJIT = dict(cache=True, nogil=True)


@njit(inline="always")
def _logaddexp(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + np.log1p(np.exp(b - a))
    return b + np.log1p(np.exp(a - b))


@njit(**_NJIT)
def _forward(theta, k, F):
    """F[j, m] = log e_m(exp θ_0 .. exp θ_{j-1}) for j = 0 .. L, m = 0 .. k."""
    L = theta.shape[0]
    F[0, 0] = 0.0
    for m in range(1, k + 1):
        F[0, m] = -np.inf
    for j in range(1, L + 1):
        t = theta[j - 1]
        F[j, 0] = 0.0
        for m in range(1, k + 1):
            F[j, m] = _logaddexp(F[j - 1, m], F[j - 1, m - 1] + t)


@njit(parallel=True, **_NJIT)
def log_partition(unary, k, with_marginals):
    """log e_k(exp unary[i]) of every example and, when asked, the label marginals.

    Parameters
    ----------
    unary : ndarray of shape (n_samples, n_labels)
    k : int, 1 <= k <= n_labels
    with_marginals : bool

    Returns
    -------
    log_z : ndarray of shape (n_samples,)
        -inf for an example with fewer than k labels of finite score.
    marginals : ndarray of shape (n_samples, n_labels)
        p(y_j = 1), zero where log_z is -inf (zeros of shape (0, 0) when not asked).
    """
    n, L = unary.shape
    log_z = np.empty(n)
    marginals = np.zeros((n, L) if with_marginals else (0, 0))
    for i in prange(n):
        theta = unary[i]
        F = np.empty((L + 1, k + 1))
        _forward(theta, k, F)
        lz = F[L, k]
        log_z[i] = lz
        if not with_marginals or lz == -np.inf:
            continue
        B = np.empty((L + 1, k + 1))
        _forward(theta[::-1].copy(), k, B)  # B[L - j] is log e_r of labels j .. L-1
        for j in range(L):
            t = theta[j]
            if t == -np.inf:
                continue
            total = 0.0
            for m in range(k):
                term = F[j, m] + t + B[L - j - 1, k - 1 - m]
                if term > -np.inf:
                    total += np.exp(term - lz)
            marginals[i, j] = min(total, 1.0)
    return log_z, marginals


@njit(**_NJIT)
def top_k_one(theta, k, K, paths, top):
    """The ``K`` best subsets of ``k`` labels of one example, into ``paths`` and ``top``.

    Parameters
    ----------
    theta : ndarray of shape (n_labels,)
    k, K : int >= 1
    paths : ndarray of shape (n_labels, K), int64
        Filled with -1 beforehand; column ``r`` receives the ``r``-th best 0/1 vector.
    top : ndarray of shape (K,)
        Filled with -inf beforehand; receives the scores, non-increasing.
    """
    L = theta.shape[0]
    order = np.argsort(-theta, kind="mergesort")  # ties: the smaller label first
    n_finite = 0
    for j in range(L):
        if theta[j] > -np.inf:
            n_finite += 1
    if n_finite < k:
        return
    sorted_theta = theta[order]
    max_nodes = 2 * K + 1
    positions = np.empty((max_nodes, k), dtype=np.int64)
    active = np.empty(max_nodes, dtype=np.int64)
    limit = np.empty(max_nodes, dtype=np.int64)
    key = np.empty(max_nodes)  # minus the score: the heap pops the smallest key
    heap = np.empty(max_nodes, dtype=np.int64)
    best = 0.0
    for m in range(k):
        positions[0, m] = m
        best += sorted_theta[m]
    active[0] = k - 1
    limit[0] = n_finite
    key[0] = -best
    size = _push(heap, 0, key, 0)
    n_nodes = 1
    for r in range(K):
        if size == 0:
            break
        node, size = _pop(heap, size, key)
        top[r] = -key[node]
        for m in range(k):
            paths[order[positions[node, m]], r] = 1
        for m in range(L):
            if paths[m, r] != 1:
                paths[m, r] = 0
        i = active[node]
        p = positions[node, i]
        # move the active element one position right, within its limit
        if p + 1 < limit[node]:
            child = n_nodes
            n_nodes += 1
            positions[child] = positions[node]
            positions[child, i] = p + 1
            active[child] = i
            limit[child] = limit[node]
            key[child] = key[node] + sorted_theta[p] - sorted_theta[p + 1]
            size = _push(heap, size, key, child)
        # activate the previous element (at its best position i - 1) by moving it to i
        if i >= 1 and i < p:
            child = n_nodes
            n_nodes += 1
            positions[child] = positions[node]
            positions[child, i - 1] = i
            active[child] = i - 1
            limit[child] = p
            key[child] = key[node] + sorted_theta[i - 1] - sorted_theta[i]
            size = _push(heap, size, key, child)


@njit(parallel=True, **_NJIT)
def top_k(unary, k, K):
    """:func:`top_k_one` for every example.

    Returns
    -------
    paths : ndarray of shape (n_samples, n_labels, K), int64
    top : ndarray of shape (n_samples, K)
    """
    n, L = unary.shape
    paths = np.full((n, L, K), -1, dtype=np.int64)
    top = np.full((n, K), -np.inf)
    for i in prange(n):
        top_k_one(unary[i], k, K, paths[i], top[i])
    return paths, top
